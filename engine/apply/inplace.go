package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A child at steady state is judged up to date without building its configuration: the
// configuration differs from desired only in its metadata (no server fields, owner as the
// ControllerRef, the hash annotation), so both the hash and the comparison read desired in
// place and make those changes as they go. This holds for the desired objects inPlace
// accepts, which are what a hook returns; for any other, and for a child that needs a write,
// the configuration is built.

// metaCompared are the keys of desired's metadata whose comparison unchanged leaves out:
// those the configuration drops or replaces, and ownerReferences and annotations, which it
// compares on their own.
var metaCompared = append([]string{"ownerReferences", "annotations"}, serverFields...)

// inPlace returns desired's metadata when configuration would accept desired for owner and
// build its configuration from desired's values: owner and desired name what they must,
// desired lists no owner references of its own and has string annotations, if any. Whether
// the values have the shape JSON decoding gives, so that the configuration shares them
// (normalizedCopy), configHash finds out as it reads them.
func inPlace(owner *metav1.OwnerReference, desired map[string]any) (meta map[string]any, ok bool) {
	if unowned(owner) {
		return nil, false // rare (children beyond the parent's namespace): judged through configuration
	}
	if owner.UID == "" || owner.APIVersion == "" || owner.Kind == "" || owner.Name == "" {
		return nil, false
	}
	meta, _ = desired["metadata"].(map[string]any)
	apiVersion, _ := desired["apiVersion"].(string)
	kind, _ := desired["kind"].(string)
	name, _ := meta["name"].(string)
	if apiVersion == "" || kind == "" || name == "" {
		return nil, false
	}
	if _, listed := meta["ownerReferences"]; listed {
		return nil, false
	}
	if a := meta["annotations"]; a != nil {
		if m, isMap := a.(map[string]any); !isMap || !stringValues(m) {
			return nil, false
		}
	}
	return meta, true
}

// unchanged is UpToDate(owner, desired, observed) for a desired object inPlace accepts,
// without building its configuration; ok is false for any other desired object, which the
// caller judges through configuration.
func unchanged(owner *metav1.OwnerReference, desired, observed *unstructured.Unstructured) (upToDate, ok bool) {
	meta, ok := inPlace(owner, desired.Object)
	if !ok {
		return false, false
	}
	if observed == nil {
		return false, isNormalized(desired.Object)
	}
	hash, err := configHash(owner, desired.Object)
	if err != nil {
		return false, false // not normalized; or an error configuration reports
	}
	haveMeta, _ := observed.Object["metadata"].(map[string]any)
	haveAnnotations, _ := haveMeta["annotations"].(map[string]any)
	recorded, _ := haveAnnotations[AppliedHashAnnotation].(string)
	if recorded != string(hash[:]) && !(len(recorded) == len(CreatedHashPrefix)+len(hash) &&
		recorded[:len(CreatedHashPrefix)] == CreatedHashPrefix && recorded[len(CreatedHashPrefix):] == string(hash[:])) {
		return false, true
	}
	// The configuration's annotations are desired's, without a hash annotation of the hook's
	// and with the one just compared.
	annotations, _ := meta["annotations"].(map[string]any)
	return containsMap(desired.Object, observed.Object, "metadata") &&
		containsMap(meta, haveMeta, metaCompared...) &&
		containsMap(annotations, haveAnnotations, AppliedHashAnnotation) &&
		hasControllerRef(owner, haveMeta["ownerReferences"]), true
}

// hasControllerRef reports whether have, an object's ownerReferences, holds the entry setOwner
// writes for owner, as containsByUID compares it: matched by uid, and every field equal.
func hasControllerRef(owner *metav1.OwnerReference, have any) bool {
	refs, _ := have.([]any)
	for _, r := range refs {
		m, ok := r.(map[string]any)
		if uid, _ := m["uid"].(string); !ok || uid != string(owner.UID) {
			continue
		}
		return containsString(owner.APIVersion, m["apiVersion"]) && containsString(owner.Kind, m["kind"]) &&
			containsString(owner.Name, m["name"]) && m["controller"] == true && m["blockOwnerDeletion"] == true
	}
	return false
}
