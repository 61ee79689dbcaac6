// Package revision keeps the revisions of CompositeController parents for rolling updates.
// A revision is the parent's values at the controller's revisionHistory.fieldPaths (its
// patch) and the children that belong to it; revisions are ControllerRevision objects in the
// cluster, owned by their parent, so that a rollout survives an engine restart.
//
// Patch, Apply, Hash and Name are pure; Plan decides one reconcile's rollout step from the
// revisions and children observed; Store writes revisions.
package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultFieldPaths is what rolls when the controller names no field paths: the whole spec.
var DefaultFieldPaths = []string{"spec"}

// Patch returns the parent's values at the dotted field paths, in a map of the same shape
// ({"spec": {"template": ...}}); a path the parent lacks is left out.
func Patch(parent *unstructured.Unstructured, paths []string) map[string]any {
	out := map[string]any{}
	for _, p := range paths {
		fields := strings.Split(p, ".")
		if v, ok, _ := unstructured.NestedFieldCopy(parent.Object, fields...); ok {
			_ = unstructured.SetNestedField(out, v, fields...)
		}
	}
	return out
}

// Apply returns a deep copy of parent whose values at the field paths are the patch's: the
// parent as it was in that revision, with every other field as it is now. A path the patch
// lacks is removed.
func Apply(parent *unstructured.Unstructured, patch map[string]any, paths []string) *unstructured.Unstructured {
	out := parent.DeepCopy()
	for _, p := range paths {
		fields := strings.Split(p, ".")
		if v, ok, _ := unstructured.NestedFieldCopy(patch, fields...); ok {
			_ = unstructured.SetNestedField(out.Object, v, fields...)
		} else {
			unstructured.RemoveNestedField(out.Object, fields...)
		}
	}
	return out
}

// Hash is a short digest of a patch: the revision's identity.
func Hash(patch map[string]any) string {
	data, _ := json.Marshal(patch) // map keys are sorted: canonical
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}

// Name is the name of the parent's revision with hash: <parent>-<hash>, the parent's name
// shortened and hashed when the whole would pass 253 characters.
func Name(parent, hash string) string {
	const limit = 253
	if len(parent)+1+len(hash) <= limit {
		return parent + "-" + hash
	}
	sum := sha256.Sum256([]byte(parent))
	short := parent[:limit-len(hash)-18] + "-" + hex.EncodeToString(sum[:])[:16]
	return strings.TrimRight(short, ".-") + "-" + hash
}
