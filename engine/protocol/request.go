package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/resources"
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
			group[ObjectKey(parent, rule.Resource, c, version)] = c.Object
		}
		out[rule.Key()] = group
	}
	return out
}

// ObjectKey is the key of obj, an object of res, in its group: the name when parent and
// object share scope (v1), "namespace/name" when a cluster-scoped parent has namespaced
// objects, and always "namespace/name" for namespaced objects under v2.
func ObjectKey(parent *unstructured.Unstructured, res resources.Resource, obj *unstructured.Unstructured,
	version v1alpha1.HookVersion) string {
	if !res.Namespaced {
		return obj.GetName()
	}
	if version == v1alpha1.HookVersionV2 || parent.GetNamespace() == "" {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetName()
}

// ParentFingerprint changes whenever what a hook may be assumed to read of a parent changes,
// but not when only its status does: its UID, generation, labels and annotations. Answers
// that depend on nothing else of the parent (a customize answer, a MapController's map call)
// are reused while it stands.
func ParentFingerprint(p *unstructured.Unstructured) string {
	data, _ := json.Marshal([]any{p.GetUID(), p.GetLabels(), p.GetAnnotations()})
	sum := sha256.Sum256(data)
	return strconv.FormatInt(p.GetGeneration(), 10) + "/" + hex.EncodeToString(sum[:8])
}
