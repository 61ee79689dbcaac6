package order

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/protocol"
)

// Rule says when an observed child counts as ready for those that wait for it: the zero
// Rule once it exists; with Conditions, once each condition check passes (the shape of a
// rolling rule's statusChecks); with Path, once the field there equals Value.
type Rule struct {
	Conditions []v1alpha1.StatusConditionCheck
	// Path is a dotted field path ("status.phase"); Value what it must hold.
	Path  string
	Value any
}

// parseRule reads a RULE: absent or null, {conditions: [{type, status?, reason?}]}, or
// {path, value}.
func parseRule(path string, raw any) (Rule, error) {
	if raw == nil {
		return Rule{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return Rule{}, protocol.Invalid(path, "expected an object, got %s", protocol.TypeName(raw))
	}
	if err := protocol.CheckFields(m, "conditions", "path", "value"); err != nil {
		return Rule{}, prefixed(path, err)
	}
	_, hasConds := m["conditions"]
	_, hasPath := m["path"]
	switch {
	case hasConds && hasPath:
		return Rule{}, protocol.Invalid(path, "give conditions or path, not both")
	case hasConds:
		return parseConditions(path+".conditions", m["conditions"])
	case hasPath:
		p, ok := m["path"].(string)
		if !ok || p == "" {
			return Rule{}, protocol.Invalid(path+".path", "required string: a dotted field path such as status.phase")
		}
		for _, part := range strings.Split(p, ".") {
			if part == "" {
				return Rule{}, protocol.Invalid(path+".path", "%q has an empty segment", p)
			}
		}
		v, ok := m["value"]
		if !ok {
			return Rule{}, protocol.Invalid(path+".value", "required: the value the field at %s must hold", p)
		}
		return Rule{Path: p, Value: v}, nil
	case m["value"] != nil:
		return Rule{}, protocol.Invalid(path+".value", "goes with path")
	}
	return Rule{}, protocol.Invalid(path, "give conditions or path; leave ready out for a child that only has to exist")
}

// parseConditions reads the condition checks of a rule.
func parseConditions(path string, raw any) (Rule, error) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return Rule{}, protocol.Invalid(path, "expected a non-empty list of {type, status?, reason?}")
	}
	checks := make([]v1alpha1.StatusConditionCheck, 0, len(list))
	for i, item := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := item.(map[string]any)
		if !ok {
			return Rule{}, protocol.Invalid(p, "expected an object, got %s", protocol.TypeName(item))
		}
		if err := protocol.CheckFields(m, "type", "status", "reason"); err != nil {
			return Rule{}, prefixed(p, err)
		}
		typ, ok := m["type"].(string)
		if !ok || typ == "" {
			return Rule{}, protocol.Invalid(p+".type", "required string")
		}
		c := v1alpha1.StatusConditionCheck{Type: typ}
		for _, f := range []struct {
			name string
			into **string
		}{{"status", &c.Status}, {"reason", &c.Reason}} {
			v, present := m[f.name]
			if !present || v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return Rule{}, protocol.Invalid(p+"."+f.name, "expected string, got %s", protocol.TypeName(v))
			}
			*f.into = &s
		}
		checks = append(checks, c)
	}
	return Rule{Conditions: checks}, nil
}

// Ready reports whether obj, an observed child, passes r, and when not, why. A child being
// deleted is not ready: it is going away.
func (r Rule) Ready(obj *unstructured.Unstructured) (bool, string) {
	if obj.GetDeletionTimestamp() != nil {
		return false, "it is being deleted"
	}
	if r.Path != "" {
		got, found, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(r.Path, ".")...)
		switch {
		case !found:
			return false, fmt.Sprintf("it has no %s (want %v)", r.Path, r.Value)
		case !protocol.SameJSON(got, r.Value):
			return false, fmt.Sprintf("%s is %v (want %v)", r.Path, got, r.Value)
		}
		return true, ""
	}
	return PassesChecks(obj, r.Conditions)
}

// PassesChecks checks obj's status.conditions against checks, each a condition that must
// be present with the given status and reason (when set); when one fails, it says why.
func PassesChecks(obj *unstructured.Unstructured, checks []v1alpha1.StatusConditionCheck) (bool, string) {
	for _, want := range checks {
		got := condition(obj, want.Type)
		switch {
		case got == nil:
			return false, fmt.Sprintf("it has no condition %s", want.Type)
		case want.Status != nil && got["status"] != *want.Status:
			return false, fmt.Sprintf("condition %s is %v (want %s)", want.Type, got["status"], *want.Status)
		case want.Reason != nil && got["reason"] != *want.Reason:
			return false, fmt.Sprintf("condition %s has reason %v (want %s)", want.Type, got["reason"], *want.Reason)
		}
	}
	return true, ""
}

// condition returns obj's status condition of type typ, or nil.
func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	list, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "conditions")
	items, _ := list.([]any)
	for _, c := range items {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}
