package informers

import (
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/shard"
)

// Need says which objects of a resource a holder of its informer reads. The zero Need is
// every object. An informer whose every holder states a narrower Need caches only the
// objects one of them needs; one holder needing everything makes it cache everything.
type Need struct {
	// Parents, when set, is the kind of the resource's objects as parents: an object is
	// needed when this replica owns it (every object, when the engine does not share its
	// parents with other replicas).
	Parents schema.GroupKind
	// Owners, when not empty, are the parent resources whose children the resource holds. An
	// object with a controller is needed when the engine does not share its parents, or when
	// its controller is a parent of one of these resources that this replica owns: children
	// of other controllers are then not needed, as the engine never claims them. An object
	// without a controller (an orphan) is needed as Orphans says.
	Owners []resources.Resource
	// Orphans says which orphans a holder with Owners reads: those its parents may adopt.
	// Orphans carrying claim.ParentUIDLabel are always read (children claimed by label).
	Orphans Orphans
	// Names are the keys (namespace/name, or name) of objects a holder with Owners reads
	// whatever else it needs: names its parents want for children that an object the
	// informer would not cache holds, so that the holder sees whose it is and when it goes.
	// Sorted, each once.
	Names []string
}

// Orphans says which objects without a ControllerRef a holder reads: every one, or those
// carrying one of Keys as a label (a parent's selector that requires a label key can only
// adopt objects carrying it). The zero Orphans reads none.
type Orphans struct {
	Every bool
	// Keys are label keys, sorted, each once.
	Keys []string
}

// Reads reports whether o reads every orphan labelled with key.
func (o Orphans) Reads(key string) bool {
	_, found := slices.BinarySearch(o.Keys, key)
	return o.Every || found
}

// Covers reports whether o reads every orphan that p reads.
func (o Orphans) Covers(p Orphans) bool {
	if o.Every || !p.Every && len(p.Keys) == 0 {
		return true
	}
	if p.Every {
		return false
	}
	for _, k := range p.Keys {
		if !o.Reads(k) {
			return false
		}
	}
	return true
}

// Union returns the orphans that o or p reads.
func (o Orphans) Union(p Orphans) Orphans {
	if o.Every || p.Every {
		return Orphans{Every: true}
	}
	keys := slices.Concat(o.Keys, p.Keys)
	slices.Sort(keys)
	return Orphans{Keys: slices.Compact(keys)}
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
	switch {
	case n.Orphans.Every:
		parts = append(parts, "orphans:*")
	case len(n.Orphans.Keys) > 0:
		parts = append(parts, "orphans:"+strings.Join(n.Orphans.Keys, ";"))
	}
	if len(n.Names) > 0 {
		parts = append(parts, "names:"+strings.Join(n.Names, ";"))
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
	// everyOrphan: some holder reads every orphan; else orphanKeys are the label keys one of
	// which an orphan must carry.
	everyOrphan bool
	orphanKeys  map[string]bool
	// names are objects kept whatever else the filter says (Need.Names).
	names map[string]bool
}

type ownerKind struct {
	prefix     string // shard.Key's prefix
	namespaced bool
}

// newFilter is the union of needs, nil when one of them needs every object.
func newFilter(needs []Need) *filter {
	f := &filter{owners: map[string]ownerKind{}, orphanKeys: map[string]bool{}, names: map[string]bool{}}
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
		if len(n.Owners) > 0 {
			f.everyOrphan = f.everyOrphan || n.Orphans.Every
			for _, k := range n.Orphans.Keys {
				f.orphanKeys[k] = true
			}
			for _, k := range n.Names {
				f.names[k] = true
			}
		}
	}
	return f
}

// equal reports whether f and g keep the same objects.
func (f *filter) equal(g *filter) bool {
	if f == nil || g == nil {
		return f == g
	}
	return f.parent == g.parent && f.everyOrphan == g.everyOrphan && maps.Equal(f.owners, g.owners) &&
		maps.Equal(f.orphanKeys, g.orphanKeys) && maps.Equal(f.names, g.names)
}

// keep reports whether u is needed by a replica that owns the parents owns says it owns; a
// nil owns owns every parent (the engine does not share its parents).
func (f *filter) keep(u *unstructured.Unstructured, owns func(string) bool) bool {
	if f == nil {
		return true
	}
	ns, name := u.GetNamespace(), u.GetName()
	if f.parent != "" && (owns == nil || owns(f.parent+objectKey(ns, name))) {
		return true
	}
	if len(f.names) > 0 && f.names[objectKey(ns, name)] {
		return true
	}
	if len(f.owners) == 0 {
		return false
	}
	ref := controllerOf(u)
	if ref == nil {
		return f.keepOrphan(u)
	}
	if owns == nil {
		// Another controller's child is kept too: a parent whose hook wants its name sees
		// whose it is (ChildConflict) and hears when it goes.
		return true
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

// keepOrphan reports whether some holder reads orphan u: one reading every orphan, or one of
// the label keys u carries. An orphan carrying claim.ParentUIDLabel is a child claimed by
// label: always kept.
func (f *filter) keepOrphan(u *unstructured.Unstructured) bool {
	if f.everyOrphan {
		return true
	}
	md, _ := u.Object["metadata"].(map[string]any)
	lbls, _ := md["labels"].(map[string]any)
	for k := range lbls {
		if f.orphanKeys[k] || k == claim.ParentUIDLabel {
			return true
		}
	}
	return false
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

// filter is the union of the needs of s and of also.
func (s needSet) filter(also needSet) *filter {
	ids := make([]string, 0, len(s)+len(also))
	needs := map[string]Need{}
	for _, set := range []needSet{s, also} {
		for id, h := range set {
			if _, ok := needs[id]; !ok {
				ids = append(ids, id)
				needs[id] = h.need
			}
		}
	}
	slices.Sort(ids)
	out := make([]Need, 0, len(ids))
	for _, id := range ids {
		out = append(out, needs[id])
	}
	return newFilter(out)
}
