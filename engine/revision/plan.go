package revision

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Child names one child of a rolling rule.
type Child struct {
	Group, Kind, Name string
}

func (c Child) String() string { return c.Kind + " " + c.Name }

// Revision is one revision of a parent as observed, or as it is to be written.
type Revision struct {
	Name     string
	Revision int64
	Patch    map[string]any
	Children []Child // sorted
}

// FromObject reads a ControllerRevision from the cache.
func FromObject(u *unstructured.Unstructured) (Revision, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return Revision{}, err
	}
	var cr v1alpha1.ControllerRevision
	if err := json.Unmarshal(data, &cr); err != nil {
		return Revision{}, fmt.Errorf("ControllerRevision %s: %w", u.GetName(), err)
	}
	r := Revision{Name: cr.Name, Revision: cr.Revision, Patch: map[string]any{}}
	if len(cr.ParentPatch.Raw) > 0 {
		if err := json.Unmarshal(cr.ParentPatch.Raw, &r.Patch); err != nil {
			return Revision{}, fmt.Errorf("ControllerRevision %s: parentPatch: %w", u.GetName(), err)
		}
	}
	for _, c := range cr.Children {
		for _, n := range c.Names {
			r.Children = append(r.Children, Child{Group: c.APIGroup, Kind: c.Kind, Name: n})
		}
	}
	sortChildren(r.Children)
	return r, nil
}

// Assign says which revision each child belongs to: the newest revision that lists it, and
// latest for a child no revision lists (a new or adopted child).
func Assign(revs []Revision, latest string, children []Child) map[Child]string {
	byNumber := slices.Clone(revs)
	slices.SortFunc(byNumber, func(a, b Revision) int { return int(a.Revision - b.Revision) })
	owner := map[Child]string{}
	for _, r := range byNumber { // newer revisions overwrite older ones
		for _, c := range r.Children {
			owner[c] = r.Name
		}
	}
	out := make(map[Child]string, len(children))
	for _, c := range children {
		if o, ok := owner[c]; ok {
			out[c] = o
		} else {
			out[c] = latest
		}
	}
	return out
}

// Check says whether an existing child passes its rule's status checks, and why not.
type Check func(Child) (ok bool, why string)

// Step is one reconcile's rollout decision.
type Step struct {
	// Moved is the child that moves to the latest revision now, if any.
	Moved *Child
	// Blocker is the child holding the rollout, and why, when one does.
	Blocker *Child
	Why     string
	// Updated of Total desired children belong to the latest revision; Pending are on older
	// ones, before the move.
	Updated, Total, Pending int
}

// Plan decides the rollout step: when every desired child already on the latest revision
// exists and passes its checks, the first desired child (in the order given) still on an
// older revision moves to latest; otherwise the first that does not pass holds the rollout.
// owner is updated with the move.
func Plan(latest string, owner map[Child]string, desired []Child, exists func(Child) bool, check Check) Step {
	var s Step
	s.Total = len(desired)
	for _, c := range desired {
		if o, ok := owner[c]; ok && o != latest {
			s.Pending++
		}
	}
	for _, c := range desired {
		if owner[c] != latest {
			continue
		}
		s.Updated++
		if s.Blocker != nil {
			continue
		}
		if !exists(c) {
			s.Blocker, s.Why = &c, "it does not exist yet"
			continue
		}
		if ok, why := check(c); !ok {
			s.Blocker, s.Why = &c, why
		}
	}
	if s.Blocker != nil {
		return s
	}
	for _, c := range desired {
		if o, ok := owner[c]; ok && o != latest && exists(c) {
			owner[c] = latest
			s.Moved = &c
			s.Updated++
			s.Pending--
			break
		}
	}
	return s
}

// Writes are the revision writes that record a step, to be made before any child is
// written: Create or Update the latest, Update the older ones whose lists changed, Delete
// the older ones no child belongs to any more.
type Writes struct {
	Create, Update, Delete []Revision
}

// Record computes the revisions after a step: latest lists every child owner puts on it;
// each older revision lists its children that still exist. The latest gets the highest
// revision number when it is new or was not the highest (a rollback to an old patch).
func Record(observed []Revision, latest string, patch map[string]any, owner map[Child]string, exists func(Child) bool) Writes {
	var w Writes
	lists := map[string][]Child{}
	for c, o := range owner {
		if o == latest || exists(c) {
			lists[o] = append(lists[o], c)
		}
	}
	var top int64
	var cur *Revision
	for i := range observed {
		top = max(top, observed[i].Revision)
		if observed[i].Name == latest {
			cur = &observed[i]
		}
	}
	want := lists[latest]
	sortChildren(want)
	switch {
	case cur == nil:
		w.Create = append(w.Create, Revision{Name: latest, Revision: top + 1, Patch: patch, Children: want})
	case cur.Revision != top || !slices.Equal(cur.Children, want):
		n := cur.Revision
		if n != top || countAt(observed, top) > 1 {
			n = top + 1
		}
		w.Update = append(w.Update, Revision{Name: latest, Revision: n, Patch: cur.Patch, Children: want})
	}
	for _, r := range observed {
		if r.Name == latest {
			continue
		}
		kept := lists[r.Name]
		sortChildren(kept)
		switch {
		case len(kept) == 0:
			w.Delete = append(w.Delete, r)
		case !slices.Equal(kept, r.Children):
			r.Children = kept
			w.Update = append(w.Update, r)
		}
	}
	return w
}

func countAt(revs []Revision, n int64) int {
	c := 0
	for _, r := range revs {
		if r.Revision == n {
			c++
		}
	}
	return c
}

func sortChildren(cs []Child) {
	slices.SortFunc(cs, func(a, b Child) int {
		return strings.Compare(a.Group+"/"+a.Kind+"/"+a.Name, b.Group+"/"+b.Kind+"/"+b.Name)
	})
}

// Object is the ControllerRevision of r, in JSON shape, for the store.
func Object(r Revision, namespace string) map[string]any {
	byKind := map[[2]string][]any{}
	for _, c := range r.Children {
		k := [2]string{c.Group, c.Kind}
		byKind[k] = append(byKind[k], c.Name)
	}
	children := []any{}
	for _, k := range slices.SortedFunc(maps.Keys(byKind), func(a, b [2]string) int {
		return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1])
	}) {
		children = append(children, map[string]any{"apiGroup": k[0], "kind": k[1], "names": byKind[k]})
	}
	return map[string]any{
		"apiVersion":  v1alpha1.GroupVersion.String(),
		"kind":        "ControllerRevision",
		"metadata":    map[string]any{"name": r.Name, "namespace": namespace},
		"revision":    r.Revision,
		"parentPatch": r.Patch,
		"children":    children,
	}
}
