// Package index holds the named indexes the engine's event paths look objects up by, so that
// no event handler lists and filters:
//
//   - ControllerUID (children): the UID of an object's ControllerRef. A parent finds the
//     children it owns in O(owned).
//   - OrphanNamespace (children): the namespace of every object with no ControllerRef. A parent
//     finds adoption candidates among the orphans of its namespace only.
//   - ParentUID (children): the parent UID label (claim.ParentUIDLabel) of every object with
//     no ControllerRef. A namespaced parent finds the children beyond its namespace, which it
//     claims by label, and their events reach it, in O(labelled).
//   - SelectorTerm (parents): one key per matchLabels pair of spec.selector, "<ns>/<k>=<v>",
//     or "<ns>/*" for selectors without matchLabels. An orphan finds candidate parents by
//     looking up one key per label it carries, plus "<ns>/*".
//   - UID (parents): the object's UID, for generated selectors and ControllerRef checks.
//   - Label (parents): one key per label, "<k>=<v>". A controller started late finds the
//     parents its selector's equality requirement names (engine/reconcile's router).
//   - Finalizer (parents): one key per finalizer. A controller started late finds the parents
//     that still hold its finalizer.
//
// Index functions read *unstructured.Unstructured objects and never modify them.
package index

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/claim"
)

// Index names.
const (
	ControllerUID   = "metascript/controller-uid"
	OrphanNamespace = "metascript/orphan-namespace"
	ParentUID       = "metascript/parent-uid"
	SelectorTerm    = "metascript/selector-term"
	UID             = "metascript/uid"
	Label           = "metascript/label"
	Finalizer       = "metascript/finalizer"
)

// AllNamespaces is the OrphanNamespace key under which every namespaced orphan is also
// indexed, for cluster-scoped parents with namespaced children.
const AllNamespaces = "*"

// Informer is the part of a shared informer an index is added to.
type Informer interface {
	EnsureIndex(name string, fn cache.IndexFunc) error
}

// RegisterChildIndexes adds ControllerUID, OrphanNamespace and ParentUID to a child informer.
func RegisterChildIndexes(inf Informer) error {
	if err := inf.EnsureIndex(ControllerUID, controllerUID); err != nil {
		return err
	}
	if err := inf.EnsureIndex(OrphanNamespace, orphanNamespace); err != nil {
		return err
	}
	return inf.EnsureIndex(ParentUID, parentUID)
}

// RegisterParentIndexes adds SelectorTerm and UID to a parent informer.
func RegisterParentIndexes(inf Informer) error {
	if err := inf.EnsureIndex(SelectorTerm, selectorTerms); err != nil {
		return err
	}
	return inf.EnsureIndex(UID, uid)
}

// RegisterRouteIndexes adds Label and Finalizer to a parent informer.
func RegisterRouteIndexes(inf Informer) error {
	if err := inf.EnsureIndex(Label, labelTerms); err != nil {
		return err
	}
	return inf.EnsureIndex(Finalizer, finalizers)
}

// LabelKey is the Label key of one label.
func LabelKey(key, value string) string { return key + "=" + value }

func labelTerms(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	lbls := u.GetLabels()
	keys := make([]string, 0, len(lbls))
	for k, v := range lbls {
		keys = append(keys, LabelKey(k, v))
	}
	return keys, nil
}

func finalizers(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	return u.GetFinalizers(), nil
}

// ControllerRef returns the object's ControllerRef, or nil.
func ControllerRef(u *unstructured.Unstructured) *metav1.OwnerReference {
	refs, ok := u.Object["metadata"].(map[string]any)["ownerReferences"].([]any)
	if !ok {
		return nil
	}
	for _, r := range refs {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		isController, _ := m["controller"].(bool)
		if !isController {
			continue
		}
		ref := &metav1.OwnerReference{Controller: &isController}
		ref.APIVersion, _ = m["apiVersion"].(string)
		ref.Kind, _ = m["kind"].(string)
		ref.Name, _ = m["name"].(string)
		if s, ok := m["uid"].(string); ok {
			ref.UID = types.UID(s)
		}
		return ref
	}
	return nil
}

// SelectorTermKey is the SelectorTerm key of one label in a parent namespace ns.
func SelectorTermKey(ns, key, value string) string { return ns + "/" + key + "=" + value }

// AnySelectorKey is the SelectorTerm key of parents whose selector has no matchLabels.
func AnySelectorKey(ns string) string { return ns + "/*" }

func controllerUID(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if _, ok := u.Object["metadata"].(map[string]any); !ok {
		return nil, nil
	}
	if ref := ControllerRef(u); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// LabelledParent returns the UID the parent UID label of an object without a ControllerRef
// names: the parent that claims it by label. ok is false for any other object.
func LabelledParent(u *unstructured.Unstructured) (uid types.UID, ok bool) {
	uid, ok = ParentUIDLabel(u)
	if !ok || ControllerRef(u) != nil {
		return "", false
	}
	return uid, true
}

// ParentUIDLabel returns the value of u's parent UID label, whether or not u has a
// ControllerRef: LabelledParent for a caller that knows u has none.
func ParentUIDLabel(u *unstructured.Unstructured) (uid types.UID, ok bool) {
	meta, _ := u.Object["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	v, _ := labels[claim.ParentUIDLabel].(string)
	return types.UID(v), v != ""
}

func parentUID(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if uid, ok := LabelledParent(u); ok {
		return []string{string(uid)}, nil
	}
	return nil, nil
}

func orphanNamespace(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if _, ok := u.Object["metadata"].(map[string]any); !ok {
		return nil, nil
	}
	if ControllerRef(u) != nil {
		return nil, nil
	}
	if ns := u.GetNamespace(); ns != "" {
		return []string{ns, AllNamespaces}, nil
	}
	return []string{""}, nil
}

func selectorTerms(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	ns := u.GetNamespace()
	sel, _, _ := unstructured.NestedMap(u.Object, "spec", "selector")
	ml, _ := sel["matchLabels"].(map[string]any)
	if len(ml) == 0 {
		return []string{AnySelectorKey(ns)}, nil
	}
	keys := make([]string, 0, len(ml))
	for k, v := range ml {
		s, _ := v.(string)
		keys = append(keys, SelectorTermKey(ns, k, s))
	}
	return keys, nil
}

func uid(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	return []string{string(u.GetUID())}, nil
}
