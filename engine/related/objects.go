package related

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
)

// Namespaces is the resource a NamespaceSelector reads.
var Namespaces = resources.Resource{
	GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
	GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"},
}

// objectMap is the request's related objects: one entry per resource the rules name, keyed
// "<Kind>.<apiVersion>", present even when empty, mapping each object's key (as children's:
// protocol.ObjectKey) to the object. An object several rules select appears once. caches
// gives each resource's cache, nil when none runs.
func objectMap(parent *unstructured.Unstructured, rules []Rule, version v1alpha1.HookVersion,
	caches func(resources.Resource) cache.Indexer) map[string]any {
	out := map[string]any{}
	nsLabels := namespaceLabels(caches)
	for _, r := range rules {
		group, _ := out[r.Resource.Key()].(map[string]any)
		if group == nil {
			group = map[string]any{}
			out[r.Resource.Key()] = group
		}
		idx := caches(r.Resource)
		if idx == nil {
			continue
		}
		for _, obj := range candidates(r, idx) {
			if r.matches(obj, nsLabels) {
				group[protocol.ObjectKey(parent, r.Resource, obj, version)] = obj.Object
			}
		}
	}
	return out
}

// candidates are the objects a rule may select, from its cache: by key for names in one
// namespace, by namespace index for one namespace, else every object.
func candidates(r Rule, idx cache.Indexer) []*unstructured.Unstructured {
	var objs []any
	switch {
	case r.Names != nil && (r.Namespace != "" || !r.Resource.Namespaced):
		for _, n := range r.Names {
			key := n
			if r.Namespace != "" {
				key = r.Namespace + "/" + n
			}
			if o, ok, _ := idx.GetByKey(key); ok {
				objs = append(objs, o)
			}
		}
	case r.Namespace != "":
		objs, _ = idx.ByIndex(cache.NamespaceIndex, r.Namespace)
	default:
		objs = idx.List()
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}

// namespaceLabels reads namespaces' labels from the namespaces cache, when one runs.
func namespaceLabels(caches func(resources.Resource) cache.Indexer) func(string) (map[string]string, bool) {
	return func(ns string) (map[string]string, bool) {
		idx := caches(Namespaces)
		if idx == nil {
			return nil, false
		}
		o, ok, _ := idx.GetByKey(ns)
		if !ok {
			return nil, false
		}
		return o.(*unstructured.Unstructured).GetLabels(), true
	}
}

// EmptyObjects is the request's related map of parent under rules when none of the objects
// they select exist: one empty group per resource the rules name.
func EmptyObjects(parent *unstructured.Unstructured, rules []Rule) map[string]any {
	return objectMap(parent, rules, v1alpha1.HookVersionV1, func(resources.Resource) cache.Indexer { return nil })
}
