package informers

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/shard"
)

// Need says which objects of a resource a holder of its informer reads. The zero Need is
// every object. When the engine shares its parents with other replicas (Factory.ShareBy), an
// informer whose every holder states a narrower Need caches only the objects this replica's
// parents need; one holder needing everything makes it cache everything.
type Need struct {
	// Parents, when set, is the kind of the resource's objects as parents: an object is
	// needed when this replica owns it.
	Parents schema.GroupKind
	// Owners, when not empty, are the parent resources whose children the resource holds: an
	// object is needed when it has no controller (this replica may adopt it) or its
	// controller is a parent of one of these resources that this replica owns. Children of
	// other controllers are not needed: the engine never claims them.
	Owners []resources.Resource
}

// whole reports whether n needs every object.
func (n Need) whole() bool { return n.Parents.Empty() && len(n.Owners) == 0 }

// id names n, so that a holder releases what it acquired.
func (n Need) id() string {
	if n.whole() {
		return ""
	}
	parts := []string{n.Parents.String()}
	for _, o := range n.Owners {
		parts = append(parts, o.GVK.GroupKind().String())
	}
	return strings.Join(parts, ",")
}

// filter is the union of an informer's needs, immutable: replaced whole when a holder comes
// or goes. A nil *filter keeps everything.
type filter struct {
	// parent is shard.Key's prefix for the resource's objects as parents; empty when they
	// are not parents.
	parent string
	// owners maps a controller's "group/Kind" to how its objects are keyed on the ring.
	owners map[string]ownerKind
}

type ownerKind struct {
	prefix     string // shard.Key's prefix
	namespaced bool
}

// newFilter is the union of needs, nil when one of them needs every object.
func newFilter(needs []Need) *filter {
	f := &filter{owners: map[string]ownerKind{}}
	for _, n := range needs {
		if n.whole() {
			return nil
		}
		if !n.Parents.Empty() {
			f.parent = shard.Key(n.Parents, "")
		}
		for _, o := range n.Owners {
			gk := o.GVK.GroupKind()
			f.owners[gk.Kind+"."+gk.Group] = ownerKind{prefix: shard.Key(gk, ""), namespaced: o.Namespaced}
		}
	}
	return f
}

// equal reports whether f and g keep the same objects.
func (f *filter) equal(g *filter) bool {
	if f == nil || g == nil {
		return f == g
	}
	if f.parent != g.parent || len(f.owners) != len(g.owners) {
		return false
	}
	for k, v := range f.owners {
		if g.owners[k] != v {
			return false
		}
	}
	return true
}

// keep reports whether u is needed by a replica that owns the parents owns says it owns.
func (f *filter) keep(u *unstructured.Unstructured, owns func(string) bool) bool {
	if f == nil {
		return true
	}
	ns, name := u.GetNamespace(), u.GetName()
	if f.parent != "" && owns(f.parent+objectKey(ns, name)) {
		return true
	}
	if len(f.owners) == 0 {
		return false
	}
	ref := controllerOf(u)
	if ref == nil {
		return true // an orphan: whoever owns a parent selecting it may adopt it
	}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	o, ok := f.owners[ref.Kind+"."+gv.Group]
	if !ok {
		return false // another controller's
	}
	if !o.namespaced {
		ns = ""
	}
	return owns(o.prefix + objectKey(ns, ref.Name))
}

// objectKey is the cache key of an object: namespace/name, or name when cluster-scoped.
func objectKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// controllerOf returns u's ControllerRef, nil without one, reading the owner references
// in place.
func controllerOf(u *unstructured.Unstructured) *metav1.OwnerReference {
	md, _ := u.Object["metadata"].(map[string]any)
	refs, _ := md["ownerReferences"].([]any)
	for _, r := range refs {
		m, _ := r.(map[string]any)
		if c, _ := m["controller"].(bool); !c {
			continue
		}
		ref := &metav1.OwnerReference{}
		ref.APIVersion, _ = m["apiVersion"].(string)
		ref.Kind, _ = m["kind"].(string)
		ref.Name, _ = m["name"].(string)
		return ref
	}
	return nil
}

// needSet counts an informer's holders by Need.
type needSet map[string]*heldNeed

type heldNeed struct {
	need Need
	n    int
}

func (s needSet) add(n Need) {
	if h := s[n.id()]; h != nil {
		h.n++
		return
	}
	s[n.id()] = &heldNeed{need: n, n: 1}
}

func (s needSet) remove(n Need) {
	if h := s[n.id()]; h != nil {
		if h.n--; h.n == 0 {
			delete(s, n.id())
		}
	}
}

func (s needSet) filter() *filter {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	needs := make([]Need, 0, len(ids))
	for _, id := range ids {
		needs = append(needs, s[id].need)
	}
	return newFilter(needs)
}
