package apply

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// serverFields are metadata fields the API server owns; a hook's copy of them is dropped from
// the applied configuration.
var serverFields = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "selfLink",
}

// OwnerRef returns the ControllerRef pointing at parent (controller and blockOwnerDeletion
// true), as Apply and Adopt expect it.
func OwnerRef(parent *unstructured.Unstructured) metav1.OwnerReference {
	// What metav1.NewControllerRef(parent, parent.GroupVersionKind()) returns, in one
	// allocation: every reconcile makes one.
	flags := new([2]bool)
	flags[0], flags[1] = true, true
	return metav1.OwnerReference{APIVersion: parent.GetAPIVersion(), Kind: parent.GetKind(), Name: parent.GetName(),
		UID: parent.GetUID(), Controller: &flags[0], BlockOwnerDeletion: &flags[1]}
}

// configuration returns the object Apply sends for desired and the hash it records: a
// normalized copy of desired without server-owned metadata, whose ownerReferences hold owner
// as the ControllerRef (replacing any entry with owner's UID, keeping the other plain owner
// references the hook listed), and whose AppliedHashAnnotation holds the SHA-256 of that
// configuration without the annotation. Normalizing makes the hash and the comparison
// independent of the Go types the hook's converter produced (int vs int64). The copy shares
// desired's values below its top level, metadata and annotations (see normalizedCopy), so
// neither may be changed there afterwards.
func configuration(owner metav1.OwnerReference, desired *unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	if !unowned(&owner) && (owner.UID == "" || owner.APIVersion == "" || owner.Kind == "" || owner.Name == "") {
		return nil, "", fmt.Errorf("%w: owner reference needs apiVersion, kind, name and uid: %+v", ErrInvalid, owner)
	}
	obj, err := normalizedCopy(desired.Object)
	if err != nil {
		return nil, "", err
	}
	config := &unstructured.Unstructured{Object: obj}
	if config.GetAPIVersion() == "" || config.GetKind() == "" || config.GetName() == "" {
		return nil, "", fmt.Errorf("%w: desired object needs apiVersion, kind and metadata.name", ErrInvalid)
	}
	meta := obj["metadata"].(map[string]any) // GetName found it
	for _, f := range serverFields {
		delete(meta, f)
	}

	if !unowned(&owner) {
		if err := setOwner(config, owner); err != nil {
			return nil, "", err
		}
	}

	// The annotations map is this configuration's own copy (normalizedCopy), so the hash
	// annotation is set in place. An absent or null one hashes as it is and gets a new map.
	annotations, isMap := meta["annotations"].(map[string]any)
	if meta["annotations"] != nil && !(isMap && stringValues(annotations)) {
		return nil, "", fmt.Errorf("%w: desired %s %s: metadata.annotations must map strings to strings",
			ErrInvalid, config.GetKind(), config.GetName())
	}
	delete(annotations, AppliedHashAnnotation)
	hash, err := canonicalHash(config.Object)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[AppliedHashAnnotation] = hash
	return config, hash, nil
}

// stringValues reports whether every value of m is a string.
func stringValues(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// setOwner makes owner the ControllerRef among config's ownerReferences: an entry with
// owner's UID is replaced, other plain owner references the hook listed are kept, and
// another controller's is refused (ErrInvalid). The entries are the maps
// unstructured.SetOwnerReferences writes; a configuration without owner references, the
// usual case, gets its one entry without a round trip through the typed struct.
func setOwner(config *unstructured.Unstructured, owner metav1.OwnerReference) error {
	meta, _ := config.Object["metadata"].(map[string]any)
	if _, listed := meta["ownerReferences"]; !listed {
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": owner.APIVersion, "kind": owner.Kind, "name": owner.Name, "uid": string(owner.UID),
			"controller": true, "blockOwnerDeletion": true,
		}}
		return nil
	}
	refs := []metav1.OwnerReference{}
	for _, ref := range config.GetOwnerReferences() {
		if ref.UID == owner.UID {
			continue
		}
		if ref.Controller != nil && *ref.Controller {
			return fmt.Errorf("%w: desired %s %s names another controller (%s %s)",
				ErrInvalid, config.GetKind(), config.GetName(), ref.Kind, ref.Name)
		}
		refs = append(refs, ref)
	}
	yes := true
	owner.Controller, owner.BlockOwnerDeletion = &yes, &yes
	config.SetOwnerReferences(append(refs, owner))
	return nil
}

// normalizedCopy returns m in the shape JSON decoding gives it (what utiljson.Unmarshal
// makes of json.Marshal(m)): maps, slices, strings, booleans, nil, int64 for integral
// numbers that fit and float64 for other numbers. Its top level, metadata and
// metadata.annotations are maps of its own, which configuration changes; below them it
// shares m's values when they have that shape already, as a hook's answers do, and is a deep
// copy otherwise. Neither m nor the result may be changed below those three maps.
func normalizedCopy(m map[string]interface{}) (map[string]interface{}, error) {
	if isNormalized(m) {
		c := maps.Clone(m)
		if meta, ok := c["metadata"].(map[string]any); ok {
			meta = maps.Clone(meta)
			if a, ok := meta["annotations"].(map[string]any); ok {
				meta["annotations"] = maps.Clone(a)
			}
			c["metadata"] = meta
		}
		return c, nil
	}
	if c, ok := normalized(m); ok {
		return c.(map[string]interface{}), nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: desired object is not JSON: %v", ErrInvalid, err)
	}
	obj := map[string]interface{}{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%w: desired object is not JSON: %v", ErrInvalid, err)
	}
	return obj, nil
}

// isNormalized reports whether v already has the shape normalized gives, without copying.
func isNormalized(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if !isNormalized(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !isNormalized(e) {
				return false
			}
		}
		return true
	case string, bool, int64, nil:
		return true
	case float64:
		n, ok := normalized(x)
		_, stays := n.(float64)
		return ok && stays
	}
	return false
}

// normalized copies v as normalizedCopy does; ok is false for a value of another type or a
// number JSON cannot hold.
func normalized(v interface{}) (interface{}, bool) {
	switch x := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, e := range x {
			n, ok := normalized(e)
			if !ok {
				return nil, false
			}
			m[k] = n
		}
		return m, true
	case []interface{}:
		l := make([]interface{}, len(x))
		for i, e := range x {
			n, ok := normalized(e)
			if !ok {
				return nil, false
			}
			l[i] = n
		}
		return l, true
	case string, bool, int64, nil:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		if x != math.Trunc(x) || math.Abs(x) >= 1e21 {
			return x, true
		}
		if math.Abs(x) <= 1<<53 {
			return int64(x), true
		}
		// Beyond 2^53 json.Marshal writes the shortest decimal that reads back as x, not x
		// exactly, and utiljson decodes that decimal as int64 if it fits.
		if i, err := strconv.ParseInt(strconv.FormatFloat(x, 'f', -1, 64), 10, 64); err == nil {
			return i, true
		}
		return x, true
	}
	return nil, false
}

// UpToDate reports whether applying desired for owner onto observed would change nothing
// this controller cares about, so that no request is needed. It is true exactly when
//
//  1. observed's AppliedHashAnnotation holds the hash of the configuration Apply would send
//     now, with or without CreatedHashPrefix (so the configuration last applied is the one wanted now: a field the hook stopped
//     returning changes the hash, and the apply that follows removes it), and
//  2. every field of that configuration is present in observed with an equal value (so a
//     field someone else changed or removed is repaired). Maps are compared key by key, and
//     fields observed has in addition (defaults, status, other managers' fields) are
//     ignored; lists must have the same length and match element by element, except
//     metadata.ownerReferences, where each applied entry must be present (matched by uid);
//     numbers compare by value (1 equals 1.0); a string equals the canonical form the API
//     server stores a quantity in ("1000m" equals "1"); a null, empty map or empty list
//     matches an absent field.
//
// Condition 1 is implied by 2, since the annotation is part of the configuration; it is
// checked first because it is cheap and fails first whenever the hook's output changed.
//
// False negatives cost one idempotent request, never a wrong result: a quantity written as a
// number (cpu: 1, stored "1"), or an associative list another manager added items to, never
// compares equal, so such a child is re-applied at every sync; write quantities as strings. An error means
// desired or owner is invalid (ErrInvalid).
func UpToDate(owner metav1.OwnerReference, desired, observed *unstructured.Unstructured) (bool, error) {
	if same, ok := unchanged(&owner, desired, observed); ok {
		return same, nil
	}
	config, hash, err := configuration(owner, desired)
	if err != nil {
		return false, err
	}
	return upToDate(config, hash, observed), nil
}

func upToDate(config *unstructured.Unstructured, hash string, observed *unstructured.Unstructured) bool {
	if observed == nil {
		return false
	}
	haveMeta, _ := observed.Object["metadata"].(map[string]any)
	haveAnnotations, _ := haveMeta["annotations"].(map[string]any)
	recorded, _ := haveAnnotations[AppliedHashAnnotation].(string)
	if recorded != hash && recorded != CreatedHashPrefix+hash {
		return false
	}
	// Everything but metadata.ownerReferences (matched by UID below) and, on a created
	// child, the hash annotation (compared above: it carries CreatedHashPrefix).
	wantMeta := config.Object["metadata"].(map[string]any)
	if !containsMap(config.Object, observed.Object, "metadata") {
		return false
	}
	if recorded == hash {
		if !containsMap(wantMeta, haveMeta, "ownerReferences") {
			return false
		}
	} else if !containsMap(wantMeta, haveMeta, "ownerReferences", "annotations") ||
		!containsMap(wantMeta["annotations"].(map[string]any), haveAnnotations, AppliedHashAnnotation) {
		return false
	}
	return containsByUID(wantMeta["ownerReferences"], haveMeta["ownerReferences"])
}

// contains reports whether have holds every field of want with an equal value, under the
// rules listed in UpToDate.
func contains(want, have interface{}) bool {
	switch w := want.(type) {
	case nil:
		return have == nil
	case map[string]interface{}:
		return containsMap(w, have)
	case []interface{}:
		h, ok := have.([]interface{})
		if !ok {
			return have == nil && len(w) == 0
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(w[i], h[i]) {
				return false
			}
		}
		return true
	case int64:
		switch h := have.(type) {
		case int64:
			return w == h
		case float64:
			return float64(w) == h
		}
		return false
	case float64:
		switch h := have.(type) {
		case int64:
			return w == float64(h)
		case float64:
			return w == h
		}
		return false
	}
	if w, ok := want.(string); ok {
		return containsString(w, have)
	}
	return want == have
}

// containsString is contains for a string want.
func containsString(want string, have any) bool {
	h, ok := have.(string)
	return ok && (want == h || normalizedQuantity(want, h))
}

// containsMap is contains for a map want, leaving out its keys named in skip.
func containsMap(want map[string]any, have any, skip ...string) bool {
	h, ok := have.(map[string]any)
	if !ok {
		if have != nil {
			return false
		}
		for k := range want {
			if !slices.Contains(skip, k) {
				return false
			}
		}
		return true
	}
	for k, wv := range want {
		if slices.Contains(skip, k) {
			continue
		}
		hv, present := h[k]
		if !present {
			if !empty(wv) {
				return false
			}
			continue
		}
		if !contains(wv, hv) {
			return false
		}
	}
	return true
}

// normalizedQuantity reports whether have is the canonical form of the quantity want, as the
// API server stores a quantity field ("1000m" is stored "1", "0.5Gi" "512Mi"). It is asked only
// of two strings that differ, and is false when want is not a quantity.
func normalizedQuantity(want, have string) bool {
	q, err := resource.ParseQuantity(want)
	return err == nil && q.String() == have
}

// empty reports whether v is null, an empty map or an empty list, which match an absent field.
func empty(v interface{}) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(v) == 0
	case []interface{}:
		return len(v) == 0
	}
	return false
}

// containsByUID reports whether every owner reference in want is present in have, matched by
// uid.
func containsByUID(want, have interface{}) bool {
	w, _ := want.([]interface{})
	h, _ := have.([]interface{})
	for _, wr := range w {
		uid := wr.(map[string]interface{})["uid"]
		found := false
		for _, hr := range h {
			if hm, ok := hr.(map[string]interface{}); ok && hm["uid"] == uid {
				found = contains(wr, hm)
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
