// Package claim is the ControllerRef decision table: given a parent and one candidate child,
// it says whether the parent adopts, keeps, releases or ignores the child, by the three laws
// of controllers (take ownership, don't interfere, don't share). It performs no I/O; the
// caller carries out the decision (engine/apply has the writes).
//
// The table follows Kubernetes' ControllerRefManager.ClaimObject:
//
//	child's ControllerRef   selector matches   parent deleting   child deleting   decision
//	other controller        any                any               any              Ignore
//	this parent             yes                any               any              Keep
//	this parent             no                 no                any              Release
//	this parent             no                 yes               any              Ignore
//	none (orphan)           no                 any               any              Ignore
//	none (orphan)           yes                yes               any              Ignore
//	none (orphan)           yes                no                yes              Ignore
//	none (orphan)           yes                no                no               Adopt
//
// Before any of these rows, a child outside a namespaced parent's namespace is ignored: an
// owner reference cannot cross namespaces, so such an object is never this parent's child by
// ControllerRef. A parent that claims beyond its namespace (Parent.Beyond) decides about such
// a child by label instead: see label.go. An orphan carrying ParentUIDLabel is likewise
// ignored by these rows: it is claimed by label, never adopted.
//
// A parent that several controllers share (the target of decorators), or whose children are
// not chosen by a selector (the outputs of a MapController), claims by mark instead of by
// selector: its children of this controller are those it controls that carry the
// controller's mark, an annotation or label naming it. Such a parent never adopts and never
// releases:
//
//	child's ControllerRef   carries the mark   decision
//	other controller        any                Ignore
//	this parent             yes                Keep
//	this parent             no                 Ignore   (another controller's child of the same parent)
//	none (orphan)           any                Ignore
//
// Why a deleting parent keeps what it owns but releases nothing: keeping requires no write,
// and the finalize hook must still see the children it is tearing down; releasing or adopting
// is a write on behalf of a parent that is going away, and adopting would re-adopt the very
// objects the garbage collector's orphan finalizer is orphaning. An owned child that stopped
// matching while the parent is deleting is therefore ignored (not counted, not touched) and
// left to the garbage collector.
package claim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Decision is what a parent does with a candidate child.
type Decision int

const (
	// Ignore: the child is not this parent's and must not be touched or counted.
	Ignore Decision = iota
	// Keep: the child is owned by this parent and still matches; count it, no write needed.
	Keep
	// Adopt: the child is a matching orphan; add this parent's ControllerRef, then count it.
	Adopt
	// Release: the child is owned by this parent but no longer matches; remove this parent
	// from its ownerReferences and stop counting it.
	Release
)

// String returns the decision's name.
func (d Decision) String() string {
	switch d {
	case Ignore:
		return "Ignore"
	case Keep:
		return "Keep"
	case Adopt:
		return "Adopt"
	case Release:
		return "Release"
	}
	return "Decision(?)"
}

// Claimed reports whether the child belongs to the parent once the decision is carried out,
// that is whether it is among the children the parent's hook sees.
func (d Decision) Claimed() bool { return d == Keep || d == Adopt }

// Parent is what the table needs to know about the parent.
type Parent struct {
	UID types.UID
	// Namespace is empty for a cluster-scoped parent.
	Namespace string
	// Deleting is true once the parent has a deletionTimestamp.
	Deleting bool
	// Selector chooses the parent's children. Nil selects nothing, like labels.Nothing():
	// a parent without a selector releases whatever it owns. Ignored when Mark is set.
	Selector labels.Selector
	// Mark, when set, makes the parent claim by mark: see the second table.
	Mark *Mark
	// Beyond, when set (a label mark naming the controller), makes a namespaced parent claim
	// the children outside its namespace by label: those without a ControllerRef that carry
	// ParentUIDLabel naming the parent and this mark (label.go).
	Beyond *Mark
}

// Mark is the annotation, or label, that tells one controller's children of a parent apart.
type Mark struct {
	Key, Value string
	// Label: the mark is a label, not an annotation.
	Label bool
}

// on reports whether a child carries the mark.
func (m *Mark) on(c Child) bool {
	if m.Label {
		v, ok := lookup(c.Labels, m.Key)
		return ok && v == m.Value
	}
	v, ok := lookup(c.Annotations, m.Key)
	return ok && v == m.Value
}

// Adopts reports whether the parent may adopt orphans, so that the caller knows whether
// orphans are candidates at all.
func (p Parent) Adopts() bool { return p.Mark == nil && p.Selector != nil && !p.Deleting }

// Child is what the table needs to know about a candidate child.
type Child struct {
	// Namespace is empty for a cluster-scoped child.
	Namespace string
	// OwnerReferences are the child's owner references, of which only the ControllerRef is
	// read. When it is nil, Controlled and ControllerUID say whose the child is instead.
	OwnerReferences []metav1.OwnerReference
	// Controlled: the child has a ControllerRef, whose UID is ControllerUID. ChildOf sets
	// these for an unstructured object, read in place rather than through a copy of its
	// owner references: every sync describes every child.
	Controlled    bool
	ControllerUID types.UID
	// Labels may be nil for none.
	Labels labels.Labels
	// Annotations are read only by parents that claim by mark; nil for none.
	Annotations labels.Labels
	// Deleting is true once the child has a deletionTimestamp.
	Deleting bool
}

// ParentOf describes obj as a parent choosing children with selector.
func ParentOf(obj metav1.Object, selector labels.Selector) Parent {
	return Parent{
		UID:       obj.GetUID(),
		Namespace: obj.GetNamespace(),
		Deleting:  obj.GetDeletionTimestamp() != nil,
		Selector:  selector,
	}
}

// ChildOf describes obj as a candidate child. It shares obj's slices and maps; Decide only
// reads them. An unstructured object's labels and annotations are read in place, not copied:
// every sync describes every child.
func ChildOf(obj metav1.Object) Child {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		meta, _ := u.Object["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		uid, controlled := controllerUIDOf(meta)
		return Child{
			Namespace:     ns,
			Controlled:    controlled,
			ControllerUID: uid,
			Labels:        LabelsOf(u),
			Annotations:   annotationsOf(u),
			Deleting:      meta["deletionTimestamp"] != nil,
		}
	}
	return Child{
		Namespace:       obj.GetNamespace(),
		OwnerReferences: obj.GetOwnerReferences(),
		Labels:          labels.Set(obj.GetLabels()),
		Annotations:     labels.Set(obj.GetAnnotations()),
		Deleting:        obj.GetDeletionTimestamp() != nil,
	}
}

// Decide applies the tables in the package comment. It is a pure function, safe for
// concurrent use.
func Decide(parent Parent, child Child) Decision {
	if Outside(parent.Namespace, child.Namespace) {
		if parent.Beyond != nil {
			return decideByLabel(parent, child)
		}
		return Ignore
	}
	controller, controlled := child.controller()
	if m := parent.Mark; m != nil {
		if controlled && controller == parent.UID && m.on(child) {
			return Keep
		}
		return Ignore
	}
	matches := parent.Selector != nil && parent.Selector.Matches(orNone(child.Labels))
	if controlled {
		switch {
		case controller != parent.UID:
			return Ignore
		case matches:
			return Keep
		case parent.Deleting:
			return Ignore
		default:
			return Release
		}
	}
	if !matches || parent.Deleting || child.Deleting || child.labelled() {
		return Ignore
	}
	return Adopt
}

// controller returns the UID of the child's ControllerRef; ok is false when it has none.
func (c Child) controller() (uid types.UID, ok bool) {
	if c.OwnerReferences == nil {
		return c.ControllerUID, c.Controlled
	}
	for i := range c.OwnerReferences {
		if ref := &c.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			return ref.UID, true // the API server allows at most one
		}
	}
	return "", false
}

// controllerUIDOf returns the UID of the ControllerRef among an unstructured object's
// metadata.ownerReferences, as GetOwnerReferences would read them: none when an entry is not
// an object.
func controllerUIDOf(meta map[string]any) (uid types.UID, ok bool) {
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		if _, isMap := r.(map[string]any); !isMap {
			return "", false
		}
	}
	for _, r := range refs {
		m := r.(map[string]any)
		if controller, _ := m["controller"].(bool); controller {
			s, _ := m["uid"].(string)
			return types.UID(s), true
		}
	}
	return "", false
}

// LabelsOf returns u's labels as labels.Labels, read in place rather than copied as
// GetLabels does; values that are not strings are absent. u must not change while in use.
func LabelsOf(u *unstructured.Unstructured) labels.Labels {
	meta, _ := u.Object["metadata"].(map[string]any)
	l, _ := meta["labels"].(map[string]any)
	return fieldStrings(l)
}

func annotationsOf(u *unstructured.Unstructured) labels.Labels {
	meta, _ := u.Object["metadata"].(map[string]any)
	a, _ := meta["annotations"].(map[string]any)
	return fieldStrings(a)
}

// fieldStrings is an object's labels or annotations as the unstructured object holds them,
// read as labels.Labels; values that are not strings are absent.
type fieldStrings map[string]any

func (f fieldStrings) Has(key string) bool { _, ok := f.Lookup(key); return ok }

func (f fieldStrings) Get(key string) string { v, _ := f.Lookup(key); return v }

func (f fieldStrings) Lookup(key string) (string, bool) {
	v, ok := f[key].(string)
	return v, ok
}

func lookup(l labels.Labels, key string) (string, bool) {
	if l == nil {
		return "", false
	}
	return l.Lookup(key)
}

func orNone(l labels.Labels) labels.Labels {
	if l == nil {
		return labels.Set(nil)
	}
	return l
}
