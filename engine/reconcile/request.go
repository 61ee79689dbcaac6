package reconcile

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
)

// ObjectMap is a request's map of observed objects (children, attachments) as the webhook
// protocol has it: one entry per rule, keyed "<Kind>.<apiVersion>" and present even when
// empty, mapping each object's key (ObjectKey) to the object. The objects are the cache's
// own; hooks see them read-only and webhooks get a JSON copy.
func ObjectMap(parent *unstructured.Unstructured, rules []ChildRule, observed map[int][]*unstructured.Unstructured,
	version v1alpha1.HookVersion) map[string]any {
	out := make(map[string]any, len(rules))
	for i, rule := range rules {
		group := make(map[string]any, len(observed[i]))
		for _, c := range observed[i] {
			group[ObjectKey(parent, rule, c, version)] = c.Object
		}
		out[rule.Key()] = group
	}
	return out
}

// ObjectKey is the key of an object in its group: the name when parent and object share
// scope (v1), "namespace/name" when a cluster-scoped parent has namespaced objects, and
// always "namespace/name" for namespaced objects under v2.
func ObjectKey(parent *unstructured.Unstructured, rule ChildRule, c *unstructured.Unstructured,
	version v1alpha1.HookVersion) string {
	if !rule.Namespaced {
		return c.GetName()
	}
	if version == v1alpha1.HookVersionV2 || parent.GetNamespace() == "" {
		return c.GetNamespace() + "/" + c.GetName()
	}
	return c.GetName()
}
