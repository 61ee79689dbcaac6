package decorator

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
)

// Ask implements reconcile.Kind: Metacontroller's decorator request (controller, object,
// attachments, related, finalizing) and one hook call, whose response of labels,
// annotations, status, attachments, resyncAfterSeconds and finalized is the outcome.
func (k *kind) Ask(d *reconcile.Gathered) (reconcile.Asked, error) {
	req := syncRequest(k.controller, d, k.rules, k.hookVersion)
	return &asked{k: k, target: d.Parent, call: [1]reconcile.Call{{Hook: d.Hook, Request: req}}}, nil
}

// syncRequest is Metacontroller's decorator request for what d gathered, the attachments
// grouped by rules.
func syncRequest(controller map[string]any, d *reconcile.Gathered, rules []protocol.ChildRule, version v1alpha1.HookVersion) map[string]any {
	return map[string]any{
		"controller":  controller,
		"object":      d.Parent.Object,
		"attachments": protocol.ObjectMap(d.Parent, rules, d.Observed, version),
		"related":     d.Related,
		"finalizing":  d.Finalizing,
	}
}

// request is Descriptor.Request: the sync or finalize request of the controller b, every
// attachment rule as a plain rule.
func request(b *reconcile.Built, d *reconcile.Gathered) map[string]any {
	dc := b.Typed.(*v1alpha1.DecoratorController)
	var rules []protocol.ChildRule
	for _, res := range b.Resources[len(dc.Spec.Resources):] {
		rules = append(rules, protocol.ChildRule{Resource: res})
	}
	return syncRequest(b.Object, d, rules, reconcile.HookVersion(b.Declared.Hooks["sync"]))
}

// asked is a decorator's decision waiting for its one answer.
type asked struct {
	k      *kind
	target *unstructured.Unstructured
	call   [1]reconcile.Call
}

func (a *asked) Calls() []reconcile.Call { return a.call[:] }

func (a *asked) Decide(answers []reconcile.Answer) (*reconcile.Outcome, error) {
	parsed, err := a.k.parseResponse(answers[0].Response, a.target)
	if err != nil {
		return nil, err
	}
	return &reconcile.Outcome{
		Children:    parsed.attachments,
		Decoration:  &parsed.decoration,
		ResyncAfter: parsed.ResyncAfter,
		Finalized:   parsed.Finalized,
		Events:      parsed.Events,
	}, nil
}

type syncResponse struct {
	protocol.Common
	decoration  apply.Decoration
	attachments map[int][]*unstructured.Unstructured
}

// requestFields and responseFields are the top-level fields of a sync or finalize request
// and response.
var (
	requestFields  = []string{"controller", "object", "attachments", "related", "finalizing"}
	responseFields = []string{"labels", "annotations", "status", "attachments", "resyncAfterSeconds", "finalized", "events"}
)

// parseResponse validates a whole response before anything is written.
func (k *kind) parseResponse(resp map[string]any, target *unstructured.Unstructured) (*syncResponse, error) {
	common, err := protocol.ParseCommon(resp, responseFields...)
	if err != nil {
		return nil, err
	}
	out := &syncResponse{Common: common}
	out.decoration.Status = common.Status
	if out.decoration.Labels, err = stringMap(resp, "labels", true); err != nil {
		return nil, err
	}
	if out.decoration.Annotations, err = stringMap(resp, "annotations", false); err != nil {
		return nil, err
	}
	out.attachments, err = protocol.Objects(resp, "attachments", target, k.rules, "attachments", k.mark, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stringMap reads the labels or annotations of a response: an object whose values are
// strings (set the key) or null (remove it). Keys must be qualified names, label values
// valid label values; keys under decorators.metascript.dev/ are the engine's.
func stringMap(resp map[string]any, field string, isLabel bool) (map[string]*string, error) {
	v, ok := resp[field]
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, protocol.Invalid(field, "expected an object of strings or nulls, got %s", protocol.TypeName(v))
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys) // the first error reported is the same at every call
	out := make(map[string]*string, len(m))
	for _, key := range keys {
		path := field + "." + key
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, protocol.Invalid(path, "key %q: %s", key, errs[0])
		}
		if strings.HasPrefix(key, "decorators.metascript.dev/") {
			return nil, protocol.Invalid(path, "keys under decorators.metascript.dev/ are the engine's")
		}
		switch e := m[key].(type) {
		case nil:
			out[key] = nil
		case string:
			if isLabel {
				if errs := validation.IsValidLabelValue(e); len(errs) > 0 {
					return nil, protocol.Invalid(path, "value %q: %s", e, errs[0])
				}
			}
			s := e
			out[key] = &s
		default:
			return nil, protocol.Invalid(path, "expected a string or null, got %s", protocol.TypeName(e))
		}
	}
	return out, nil
}
