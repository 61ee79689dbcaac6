package protocol

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"metascript.dev/metascript/engine/claim"
)

// Validation of the parts of hook responses every kind shares. A response is validated
// whole before anything is written; each error names the path of what is wrong.

// InvalidResponseError locates what is wrong with a hook response. Nothing is written when a
// response is invalid.
type InvalidResponseError struct {
	Path string
	Msg  string
}

func (e *InvalidResponseError) Error() string {
	if e.Path == "" {
		return "invalid hook response: " + e.Msg
	}
	return fmt.Sprintf("invalid hook response: %s: %s", e.Path, e.Msg)
}

// Invalid returns an *InvalidResponseError at path.
func Invalid(path, format string, args ...any) error {
	return &InvalidResponseError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// CheckFields refuses a response field not among allowed.
func CheckFields(resp map[string]any, allowed ...string) error {
	for k := range resp {
		if !slices.Contains(allowed, k) {
			return Invalid(k, "unknown field (expected %s)", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// Common is the part of a response every kind reads the same way.
type Common struct {
	// Status is the response's status object; nil when absent or null.
	Status      map[string]any
	ResyncAfter time.Duration
	Finalized   bool
	// Events are what the hook asks to record on the parent.
	Events []Event
}

// ParseCommon refuses a field of resp not among allowed (the fields of the hook's response),
// then reads status (an object or null), resyncAfterSeconds (0 to one year), finalized
// (a boolean) and events (see Event).
func ParseCommon(resp map[string]any, allowed ...string) (Common, error) {
	var c Common
	if err := CheckFields(resp, allowed...); err != nil {
		return c, err
	}
	if s, ok := resp["status"]; ok && s != nil {
		m, ok := s.(map[string]any)
		if !ok {
			return c, Invalid("status", "expected an object, got %s", TypeName(s))
		}
		if err := checkSize("status", m); err != nil {
			return c, err
		}
		c.Status = m
	}
	if v, ok := resp["resyncAfterSeconds"]; ok && v != nil {
		secs, ok := number(v)
		if !ok || secs < 0 || math.IsNaN(secs) || secs > 365*24*3600 {
			return c, Invalid("resyncAfterSeconds", "expected a number of seconds between 0 and one year, got %v", v)
		}
		c.ResyncAfter = time.Duration(secs * float64(time.Second))
	}
	if v, ok := resp["finalized"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return c, Invalid("finalized", "expected a boolean, got %s", TypeName(v))
		}
		c.Finalized = b
	}
	events, err := parseEvents(resp)
	if err != nil {
		return c, err
	}
	c.Events = events
	return c, nil
}

// Objects validates the list of objects at field of resp (children, attachments) and groups
// them by index of rules: each is an object of a declared rule (ruleField names where rules
// are declared, for the message), has a legal name, string labels and annotations, and a
// namespace fitting its scope (defaulted to the parent's); no object appears twice. mark,
// when not nil, is the controller's claim mark: set on each object, which may not name
// another controller in it. check, when not nil, runs last on each object and may complete
// it (add labels, annotations); it receives the object's path and its rule's index. The
// objects are the response's own maps.
func Objects(resp map[string]any, field string, parent *unstructured.Unstructured, rules []ChildRule, ruleField string,
	mark *claim.Mark, check func(path string, rule int, obj *unstructured.Unstructured) error) (map[int][]*unstructured.Unstructured, error) {
	out := make(map[int][]*unstructured.Unstructured, len(rules))
	list, _ := resp[field].([]any)
	if c, ok := resp[field]; ok && c != nil && list == nil {
		return nil, Invalid(field, "expected a list, got %s", TypeName(c))
	}
	seen := seenObjects{}
	if len(list) > len(seen.few) {
		seen.many = make(map[objectID]int, len(list))
	}
	for i, item := range list {
		path := field + "[" + strconv.Itoa(i) + "]"
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, Invalid(path, "expected an object, got %s", TypeName(item))
		}
		child := &unstructured.Unstructured{Object: obj}
		ri, err := validateObject(path, child, parent, rules, ruleField)
		if err != nil {
			return nil, err
		}
		if err := checkSize(path, obj); err != nil {
			return nil, err
		}
		if err := labelBeyond(path, child, parent, rules[ri]); err != nil {
			return nil, err
		}
		if mark != nil {
			if err := stampMark(path, child, mark); err != nil {
				return nil, err
			}
		}
		if check != nil {
			if err := check(path, ri, child); err != nil {
				return nil, err
			}
		}
		id := objectID{rule: ri}
		id.namespace, id.name = namespaceAndName(child)
		if j, dup := seen.add(id, i); dup {
			return nil, Invalid(path, "duplicate of %s[%d] (%s %s)", field, j, child.GetKind(), child.GetName())
		}
		if out[ri] == nil {
			out[ri] = make([]*unstructured.Unstructured, 0, len(list)-i) // room for the rest, usually of one rule
		}
		out[ri] = append(out[ri], child)
	}
	return out, nil
}

// objectID tells the objects of a response apart: no two may have the same.
type objectID struct {
	rule            int
	namespace, name string
}

// seenObjects are the objects of a response validated so far: a few are compared one by
// one, without a map.
type seenObjects struct {
	few  [16]objectID
	at   [16]int // the index of few[i] in the response's list
	n    int
	many map[objectID]int // used instead when the list is longer than few
}

// add records the object id at index i of the list, unless one with that id came before:
// then it returns that one's index and true.
func (s *seenObjects) add(id objectID, i int) (int, bool) {
	if s.many != nil {
		if j, dup := s.many[id]; dup {
			return j, true
		}
		s.many[id] = i
		return 0, false
	}
	for k := range s.n {
		if s.few[k] == id {
			return s.at[k], true
		}
	}
	s.few[s.n], s.at[s.n] = id, i
	s.n++
	return 0, false
}

// namespaceAndName are an object's, read in place.
func namespaceAndName(obj *unstructured.Unstructured) (namespace, name string) {
	md, _ := obj.Object["metadata"].(map[string]any)
	namespace, _ = md["namespace"].(string)
	name, _ = md["name"].(string)
	return namespace, name
}

func validateObject(path string, child, parent *unstructured.Unstructured, rules []ChildRule, ruleField string) (int, error) {
	apiVersion, ok := child.Object["apiVersion"].(string)
	if !ok || apiVersion == "" {
		return 0, Invalid(path+".apiVersion", "required string")
	}
	kind, ok := child.Object["kind"].(string)
	if !ok || kind == "" {
		return 0, Invalid(path+".kind", "required string")
	}
	ri := -1
	for i, r := range rules {
		if r.GVK.Kind == kind && r.APIVersion() == apiVersion {
			ri = i
			break
		}
	}
	if ri < 0 {
		return 0, Invalid(path, "%s %s is not among the controller's %s", apiVersion, kind, ruleField)
	}
	md, ok := child.Object["metadata"].(map[string]any)
	if !ok {
		return 0, Invalid(path+".metadata", "required object")
	}
	name, ok := md["name"].(string)
	if !ok || name == "" {
		return 0, Invalid(path+".metadata.name", "required string")
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return 0, Invalid(path+".metadata.name", "%q: %s", name, errs[0])
	}
	if err := checkStrings(path, ".metadata.labels", md["labels"]); err != nil {
		return 0, err
	}
	if err := checkStrings(path, ".metadata.annotations", md["annotations"]); err != nil {
		return 0, err
	}
	rule := rules[ri]
	ns, _ := md["namespace"].(string)
	if v, ok := md["namespace"]; ok && v != nil {
		if _, ok := v.(string); !ok {
			return 0, Invalid(path+".metadata.namespace", "expected string, got %s", TypeName(v))
		}
	}
	switch {
	case !rule.Namespaced && ns != "":
		return 0, Invalid(path+".metadata.namespace", "%s is cluster-scoped and takes no namespace", kind)
	case rule.Namespaced && parent.GetNamespace() == "" && ns == "":
		return 0, Invalid(path+".metadata.namespace", "required: the parent is cluster-scoped")
	case rule.Namespaced && parent.GetNamespace() != "" && ns != "" && ns != parent.GetNamespace() && rule.Beyond == nil:
		return 0, Invalid(path+".metadata.namespace", "%q differs from the parent's namespace %q%s", ns, parent.GetNamespace(), confinedBy(rule))
	case rule.Namespaced && ns == "":
		md["namespace"] = parent.GetNamespace()
	}
	return ri, nil
}

// stampMark sets the controller's claim mark on obj, refusing a value naming another.
func stampMark(path string, obj *unstructured.Unstructured, mark *claim.Mark) error {
	field, have := "annotations", obj.GetAnnotations()
	if mark.Label {
		field, have = "labels", obj.GetLabels()
	}
	if v, ok := have[mark.Key]; ok && v != mark.Value {
		return Invalid(path+".metadata."+field+"."+mark.Key, "%q names another controller; the engine sets it to %q", v, mark.Value)
	}
	SetStrings(obj, field, map[string]string{mark.Key: mark.Value})
	return nil
}

// SetStrings sets the given keys of the string map at metadata.<field> of obj, creating it.
// It puts a new map in place of the one obj had rather than writing into it: a response's
// maps below its objects' metadata may be shared (a request view a Starlark hook placed in
// several objects).
func SetStrings(obj *unstructured.Unstructured, field string, kv map[string]string) {
	md := obj.Object["metadata"].(map[string]any)
	old, _ := md[field].(map[string]any)
	m := make(map[string]any, len(old)+len(kv))
	for k, v := range old {
		m[k] = v
	}
	for k, v := range kv {
		m[k] = v
	}
	md[field] = m
}

// checkStrings refuses anything but null or an object of strings at path+field.
func checkStrings(path, field string, v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Invalid(path+field, "expected an object of strings, got %s", TypeName(v))
	}
	for k, e := range m {
		if _, ok := e.(string); !ok {
			return Invalid(path+field+"."+k, "expected string, got %s", TypeName(e))
		}
	}
	return nil
}
