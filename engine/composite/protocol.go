package composite

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/resources"
)

// syncRequest builds the sync/finalize hook request of the reference: controller, parent,
// children (one entry per child rule, even when empty), related and finalizing. The objects
// are the informer cache's own; hooks see them read-only and webhooks get a JSON copy.
func syncRequest(controller map[string]any, parent *unstructured.Unstructured, rules []childRule,
	observed map[int][]*unstructured.Unstructured, version v1alpha1.HookVersion, finalizing bool) map[string]any {
	children := make(map[string]any, len(rules))
	related := make(map[string]any)
	for i, rule := range rules {
		group := make(map[string]any, len(observed[i]))
		for _, c := range observed[i] {
			group[childKey(parent, rule.Resource, c, version)] = c.Object
		}
		children[rule.Key()] = group
	}
	return map[string]any{
		"controller": controller,
		"parent":     parent.Object,
		"children":   children,
		"related":    related,
		"finalizing": finalizing,
	}
}

// childKey is the name of a child in its group: the name when parent and child share scope
// (v1), "namespace/name" when a cluster-scoped parent has namespaced children, and always
// "namespace/name" for namespaced children under v2.
func childKey(parent *unstructured.Unstructured, child resources.Resource, c *unstructured.Unstructured,
	version v1alpha1.HookVersion) string {
	if !child.Namespaced {
		return c.GetName()
	}
	if version == v1alpha1.HookVersionV2 || parent.GetNamespace() == "" {
		return c.GetNamespace() + "/" + c.GetName()
	}
	return c.GetName()
}

// syncResponse is a validated hook response.
type syncResponse struct {
	// status replaces the parent's status when hasStatus.
	status    map[string]any
	hasStatus bool
	// children are the desired children with namespace defaulted, grouped by rule index.
	children    map[int][]*unstructured.Unstructured
	resyncAfter time.Duration
	finalized   bool
}

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

func invalid(path, format string, args ...any) error {
	return &InvalidResponseError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// parseResponse validates a whole response before anything is written: every child's
// apiVersion/kind is a declared child resource, it has a legal name, a legal namespace for
// its scope, and labels matching the parent's selector; no child appears twice.
func parseResponse(resp map[string]any, parent *unstructured.Unstructured, rules []childRule,
	selector labels.Selector, extraLabels map[string]string) (*syncResponse, error) {
	out := &syncResponse{children: map[int][]*unstructured.Unstructured{}}
	for k := range resp {
		switch k {
		case "status", "children", "resyncAfterSeconds", "finalized":
		default:
			return nil, invalid(k, "unknown field (expected status, children, resyncAfterSeconds, finalized)")
		}
	}
	if s, ok := resp["status"]; ok && s != nil {
		m, ok := s.(map[string]any)
		if !ok {
			return nil, invalid("status", "expected an object, got %s", typeName(s))
		}
		out.status, out.hasStatus = m, true
	}
	if v, ok := resp["resyncAfterSeconds"]; ok && v != nil {
		secs, ok := number(v)
		if !ok || secs < 0 || math.IsNaN(secs) || secs > 365*24*3600 {
			return nil, invalid("resyncAfterSeconds", "expected a number of seconds between 0 and one year, got %v", v)
		}
		out.resyncAfter = time.Duration(secs * float64(time.Second))
	}
	if v, ok := resp["finalized"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return nil, invalid("finalized", "expected a boolean, got %s", typeName(v))
		}
		out.finalized = b
	}
	list, _ := resp["children"].([]any)
	if c, ok := resp["children"]; ok && c != nil && list == nil {
		return nil, invalid("children", "expected a list, got %s", typeName(c))
	}
	seen := make(map[string]int, len(list))
	for i, item := range list {
		path := fmt.Sprintf("children[%d]", i)
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, invalid(path, "expected an object, got %s", typeName(item))
		}
		child := &unstructured.Unstructured{Object: obj}
		ri, err := validateChild(path, child, parent, rules, selector, extraLabels)
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("%d/%s/%s", ri, child.GetNamespace(), child.GetName())
		if j, dup := seen[id]; dup {
			return nil, invalid(path, "duplicate of children[%d] (%s %s)", j, child.GetKind(), child.GetName())
		}
		seen[id] = i
		out.children[ri] = append(out.children[ri], child)
	}
	return out, nil
}

func validateChild(path string, child, parent *unstructured.Unstructured, rules []childRule,
	selector labels.Selector, extraLabels map[string]string) (int, error) {
	apiVersion, ok := child.Object["apiVersion"].(string)
	if !ok || apiVersion == "" {
		return 0, invalid(path+".apiVersion", "required string")
	}
	kind, ok := child.Object["kind"].(string)
	if !ok || kind == "" {
		return 0, invalid(path+".kind", "required string")
	}
	ri := -1
	for i, r := range rules {
		if r.GVK.Kind == kind && r.APIVersion() == apiVersion {
			ri = i
			break
		}
	}
	if ri < 0 {
		return 0, invalid(path, "%s %s is not among the controller's childResources", apiVersion, kind)
	}
	md, ok := child.Object["metadata"].(map[string]any)
	if !ok {
		return 0, invalid(path+".metadata", "required object")
	}
	name, ok := md["name"].(string)
	if !ok || name == "" {
		return 0, invalid(path+".metadata.name", "required string")
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return 0, invalid(path+".metadata.name", "%q: %s", name, errs[0])
	}
	if err := checkStrings(path+".metadata.labels", md["labels"]); err != nil {
		return 0, err
	}
	if err := checkStrings(path+".metadata.annotations", md["annotations"]); err != nil {
		return 0, err
	}
	rule := rules[ri]
	ns, _ := md["namespace"].(string)
	if v, ok := md["namespace"]; ok && v != nil {
		if _, ok := v.(string); !ok {
			return 0, invalid(path+".metadata.namespace", "expected string, got %s", typeName(v))
		}
	}
	switch {
	case !rule.Namespaced && ns != "":
		return 0, invalid(path+".metadata.namespace", "%s is cluster-scoped and takes no namespace", kind)
	case rule.Namespaced && parent.GetNamespace() == "" && ns == "":
		return 0, invalid(path+".metadata.namespace", "required: the parent is cluster-scoped")
	case rule.Namespaced && parent.GetNamespace() != "" && ns != "" && ns != parent.GetNamespace():
		return 0, invalid(path+".metadata.namespace", "%q differs from the parent's namespace %q", ns, parent.GetNamespace())
	case rule.Namespaced && ns == "":
		md["namespace"] = parent.GetNamespace()
	}
	if len(extraLabels) > 0 {
		l, _ := md["labels"].(map[string]any)
		if l == nil {
			l = map[string]any{}
			md["labels"] = l
		}
		for k, v := range extraLabels {
			l[k] = v
		}
	}
	if !selector.Matches(labels.Set(child.GetLabels())) {
		return 0, invalid(path+".metadata.labels", "%v do not match the parent's selector %q (the child would be orphaned at once)",
			child.GetLabels(), selector.String())
	}
	return ri, nil
}

func checkStrings(path string, v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return invalid(path, "expected an object of strings, got %s", typeName(v))
	}
	for k, e := range m {
		if _, ok := e.(string); !ok {
			return invalid(path+"."+k, "expected string, got %s", typeName(e))
		}
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64, int:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
