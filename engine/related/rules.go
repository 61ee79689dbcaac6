package related

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/selector"
)

// ResponseFields are the top-level fields of a customize hook's response.
var ResponseFields = []string{"relatedResources"}

// Resolver resolves an apiVersion and a plural resource name; *resources.Resolver is one.
type Resolver interface {
	Resolve(apiVersion, resource string) (resources.Resource, error)
}

// Rule is one rule of a customize hook's answer, resolved: which objects of one resource a
// parent's sync and finalize hooks see under request.related.
type Rule struct {
	Resource resources.Resource
	// Namespace is where a namespaced resource's objects are looked for: the parent's
	// namespace under a namespaced parent; under a cluster-scoped one, the rule's namespace,
	// or "" for every namespace (NamespaceSelector narrowing it). Empty for cluster-scoped
	// resources.
	Namespace string
	// Names, when set, are the objects' names; otherwise Selector chooses them.
	Names    []string
	Selector labels.Selector
	// NamespaceSelector, when set, keeps objects whose namespace's labels it matches.
	NamespaceSelector labels.Selector
}

// Reach is how far a namespaced parent's related rules may select.
type Reach bool

const (
	// OwnNamespace: a namespaced parent's rules select in its own namespace only, whatever
	// they say (hooks of version v1, and every controller of a namespaced kind).
	OwnNamespace Reach = false
	// AnyNamespace: a namespaced parent's rules select as a cluster-scoped parent's do: in
	// the rule's namespace, in the namespaces its namespaceSelector matches, or in every
	// namespace (customize and sync hooks of version v2 of a cluster-scoped controller kind,
	// whose hooks key namespaced objects namespace/name).
	AnyNamespace Reach = true
)

// parseCustomize validates a customize response whole, resolving each rule's resource:
// {"relatedResources": [{apiVersion, resource, labelSelector | names, namespace,
// namespaceSelector}]}. Every error it returns is a *protocol.InvalidResponseError.
func parseCustomize(resp map[string]any, parent *unstructured.Unstructured, resolver Resolver, reach Reach) ([]Rule, error) {
	if err := protocol.CheckFields(resp, ResponseFields...); err != nil {
		return nil, err
	}
	list, _ := resp["relatedResources"].([]any)
	if v, ok := resp["relatedResources"]; ok && v != nil && list == nil {
		return nil, protocol.Invalid("relatedResources", "expected a list, got %s", protocol.TypeName(v))
	}
	var out []Rule
	for i, item := range list {
		path := fmt.Sprintf("relatedResources[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, protocol.Invalid(path, "expected an object, got %s", protocol.TypeName(item))
		}
		rule, err := parseRule(path, m, parent, resolver, reach)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	return out, nil
}

func parseRule(path string, m map[string]any, parent *unstructured.Unstructured, resolver Resolver, reach Reach) (Rule, error) {
	for k := range m {
		switch k {
		case "apiVersion", "resource", "labelSelector", "namespace", "names", "namespaceSelector":
		default:
			return Rule{}, protocol.Invalid(path+"."+k, "unknown field (expected apiVersion, resource, labelSelector, names, namespace, namespaceSelector)")
		}
	}
	var r Rule
	apiVersion, _ := m["apiVersion"].(string)
	resource, _ := m["resource"].(string)
	if apiVersion == "" || resource == "" {
		return r, protocol.Invalid(path, "apiVersion and resource are required strings")
	}
	res, err := resolver.Resolve(apiVersion, resource)
	if err != nil {
		return r, protocol.Invalid(path, "%v", err)
	}
	r.Resource = res
	_, hasSel := m["labelSelector"]
	names, hasNames := m["names"]
	switch {
	case hasSel && hasNames:
		return r, protocol.Invalid(path, "labelSelector and names are mutually exclusive")
	case !hasSel && !hasNames:
		r.Selector = labels.Everything() // every object (of the namespace, when one is given)
	case hasNames:
		list, ok := names.([]any)
		if !ok || len(list) == 0 {
			return r, protocol.Invalid(path+".names", "expected a list of names, got %s", protocol.TypeName(names))
		}
		for j, n := range list {
			s, ok := n.(string)
			if !ok || s == "" {
				return r, protocol.Invalid(fmt.Sprintf("%s.names[%d]", path, j), "expected a name, got %s", protocol.TypeName(n))
			}
			r.Names = append(r.Names, s)
		}
	default:
		if r.Selector, err = selectorAt(path+".labelSelector", m["labelSelector"]); err != nil {
			return r, err
		}
	}
	ns, _ := m["namespace"].(string)
	if v, ok := m["namespace"]; ok && v != nil && ns == "" {
		if _, isString := v.(string); !isString {
			return r, protocol.Invalid(path+".namespace", "expected a string, got %s", protocol.TypeName(v))
		}
	}
	if v, ok := m["namespaceSelector"]; ok && v != nil {
		if r.NamespaceSelector, err = selectorAt(path+".namespaceSelector", v); err != nil {
			return r, err
		}
	}
	switch {
	case !res.Namespaced && (ns != "" || r.NamespaceSelector != nil):
		return r, protocol.Invalid(path, "%s is cluster-scoped: namespace and namespaceSelector do not apply", resource)
	case !res.Namespaced:
	case parent.GetNamespace() != "" && reach == OwnNamespace && (ns != "" && ns != parent.GetNamespace() || r.NamespaceSelector != nil):
		return r, protocol.Invalid(path, "a namespaced parent's related objects are in its own namespace %q (beyond it only with customize and sync hooks of version v2 of a cluster-scoped controller kind)", parent.GetNamespace())
	case parent.GetNamespace() != "" && reach == OwnNamespace:
		r.Namespace = parent.GetNamespace()
	case ns != "" && r.NamespaceSelector != nil:
		return r, protocol.Invalid(path, "namespace and namespaceSelector are mutually exclusive")
	default:
		r.Namespace = ns
	}
	return r, nil
}

// selectorAt parses a metav1.LabelSelector; {} selects everything.
func selectorAt(path string, v any) (labels.Selector, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, protocol.Invalid(path, "expected a label selector object, got %s", protocol.TypeName(v))
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, protocol.Invalid(path, "%v", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, protocol.Invalid(path, "%v", err)
	}
	return sel, nil
}

// resourcesOf lists the resources whose caches the rules read, once each, namespaces included
// when a rule selects by namespace labels.
func resourcesOf(rules []Rule) []resources.Resource {
	var out []resources.Resource
	add := func(r resources.Resource) {
		if !slices.ContainsFunc(out, func(o resources.Resource) bool { return o.GVR == r.GVR }) {
			out = append(out, r)
		}
	}
	for _, r := range rules {
		add(r.Resource)
		if r.NamespaceSelector != nil {
			add(Namespaces)
		}
	}
	return out
}

// matches reports whether the rule selects obj; nsLabels gives a namespace's labels.
func (r Rule) matches(obj *unstructured.Unstructured, nsLabels func(string) (map[string]string, bool)) bool {
	if r.Resource.Namespaced && r.Namespace != "" && obj.GetNamespace() != r.Namespace {
		return false
	}
	if r.Names != nil {
		if !slices.Contains(r.Names, obj.GetName()) {
			return false
		}
	} else if !r.Selector.Matches(selector.Labels(obj)) {
		return false
	}
	if r.NamespaceSelector != nil {
		l, ok := nsLabels(obj.GetNamespace())
		return ok && r.NamespaceSelector.Matches(labels.Set(l))
	}
	return true
}

// ParseCustomize validates a customize hook's answer whole and resolves its rules, as a
// Tracker does before it reads anything: for callers that hold the answer themselves (the
// offline commands). Every error it returns is a *protocol.InvalidResponseError.
func ParseCustomize(resp map[string]any, parent *unstructured.Unstructured, resolver Resolver, reach Reach) ([]Rule, error) {
	return parseCustomize(resp, parent, resolver, reach)
}
