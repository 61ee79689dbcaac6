package reconcile

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/informers"
)

// The child informers cache only the orphans the runner's parents may adopt: those carrying a
// label key that a parent's selector requires (a cluster's unrelated objects stay out of the
// engine's memory). The set of keys only grows while the runner runs. It is read from the
// cached parents before the children are first listed, and widened from the parent handler,
// before the parent is enqueued, when a parent's selector requires none of the keys; the
// widening makes the child informers list again (informers.Factory.Widen), and no parent
// is reconciled until they have caught up, so that no adoption is missed.
//
// A desired child whose name an uncached object holds (an orphan no parent may adopt, or,
// when replicas share the parents, a child of a parent owned elsewhere) is found by its
// create, which fails. The name is then added to what the child informers read, the same
// way: the next reconcile sees the object in the cache, reports whose it is (ChildConflict)
// and hears when it goes, as for any cached object.

// catchUpDelay is how long a reconcile waits for child informers that are catching up with
// what they read.
const catchUpDelay = 20 * time.Millisecond

// adopts reports whether the runner's parents may adopt orphans at all.
func (r *Runner) adopts() bool { return r.cfg.Watches.Orphans != nil && len(r.children) > 0 }

// orphansOf returns the orphans a parent adopting by sel may adopt, with one of its required
// label keys: one already in have when there is one, so that the keys grow only when they
// must. A nil sel (the parent adopts nothing) needs no orphan; a selector requiring no key
// (only NotIn, !=, or !key) needs every orphan.
func orphansOf(sel labels.Selector, have informers.Orphans) informers.Orphans {
	if sel == nil {
		return informers.Orphans{}
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return informers.Orphans{} // labels.Nothing()
	}
	var first string
	for _, req := range reqs {
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In, selection.Exists,
			selection.GreaterThan, selection.LessThan:
			if have.Reads(req.Key()) {
				return informers.Orphans{Keys: []string{req.Key()}}
			}
			if first == "" {
				first = req.Key()
			}
		}
	}
	if first == "" {
		return informers.Orphans{Every: true}
	}
	return informers.Orphans{Keys: []string{first}}
}

// parentOrphans returns the orphans parent may adopt, given the orphans read already.
func (r *Runner) parentOrphans(parent *unstructured.Unstructured, have informers.Orphans) informers.Orphans {
	if r.cfg.Watches.OrphanSelector == nil {
		return informers.Orphans{Every: true}
	}
	return orphansOf(r.cfg.Watches.OrphanSelector(parent), have)
}

// readOrphans sets the orphans the child informers are first acquired for, from every cached
// parent the controller selects, once the parents' informers have synced. Start calls it
// before acquiring the children; it returns false when ctx ends first.
func (r *Runner) readOrphans(ctx context.Context, synced []cache.InformerSynced) bool {
	if !r.adopts() {
		return true
	}
	if !informers.WaitSynced(ctx, synced...) {
		return false
	}
	var o informers.Orphans
	for i := range r.parents {
		for _, obj := range r.selectable(i) {
			if u, ok := obj.(*unstructured.Unstructured); ok && r.cfg.Kind.Selects(i, u) {
				o = o.Union(r.parentOrphans(u, o))
			}
		}
	}
	r.needMu.Lock()
	r.orphans = o
	r.needMu.Unlock()
	return true
}

// selectable is what of the i-th parent resource's cache the runner may select: the parents
// that hold one of the labels its selector needs one of (index.Label), or, when it needs
// none, every cached parent. A thousand controllers each selecting one parent by label so
// start without each going through every other's parents.
func (r *Runner) selectable(i int) []any {
	p := r.parents[i]
	k, ok := r.cfg.Kind.(LabelSelected)
	if !ok || p.informer == nil {
		return p.indexer.List()
	}
	terms := selectorLabels(k.ParentSelector(i))
	if len(terms) == 0 || index.RegisterRouteIndexes(p.informer) != nil {
		return p.indexer.List()
	}
	var out []any
	for _, t := range terms {
		objs, err := p.indexer.ByIndex(index.Label, t)
		if err != nil {
			return p.indexer.List()
		}
		out = append(out, objs...)
	}
	return out
}

// widenOrphans makes the child informers read the orphans a selected parent may adopt, when
// they did not already. Parent handlers call it before enqueueing the parent.
func (r *Runner) widenOrphans(parent *unstructured.Unstructured) {
	if !r.adopts() {
		return
	}
	r.needMu.Lock()
	defer r.needMu.Unlock()
	want := r.parentOrphans(parent, r.orphans)
	if r.orphans.Covers(want) {
		return
	}
	r.widenLocked(r.orphans.Union(want), r.names)
	r.cfg.Log.Info("reading more orphans of the child resources", "orphans", describeOrphans(r.orphans))
}

// nameHeld makes the child informers read the object that holds the name of desired child
// d of rule, unless the cache holds it already (then it is only behind).
func (r *Runner) nameHeld(rule int, d *unstructured.Unstructured) {
	key := cacheKey(d)
	if _, cached, _ := r.children[rule].indexer.GetByKey(key); cached {
		return
	}
	r.needMu.Lock()
	defer r.needMu.Unlock()
	i, found := slices.BinarySearch(r.names, key)
	if found {
		return
	}
	r.widenLocked(r.orphans, slices.Insert(slices.Clone(r.names), i, key))
	r.cfg.Log.Info("reading an object that holds a child's name", "object", r.children[rule].Describe(d))
}

// widenLocked makes the child informers read orphans and names, which cover what they read
// now. r.needMu is held.
func (r *Runner) widenLocked(orphans informers.Orphans, names []string) {
	from := r.childNeedFor(r.orphans, r.names)
	r.orphans, r.names = orphans, names
	to := r.childNeedFor(r.orphans, r.names)
	for i := range r.children { // by index: subscribe sets other fields of a childSource
		if inf := r.children[i].informer; inf != nil {
			r.cfg.Informers.Widen(inf, from, to)
		}
	}
}

// childrenCatchingUp reports whether a child informer has not yet handed its store what its
// holders now need (after a widening): a reconcile then could miss an orphan to adopt, or
// not see whose a name is.
func (r *Runner) childrenCatchingUp() bool {
	for i := range r.children {
		if inf := r.children[i].informer; inf != nil && !inf.HasSynced() {
			return true
		}
	}
	return false
}

func describeOrphans(o informers.Orphans) string {
	if o.Every {
		return "every orphan"
	}
	return "orphans labelled with one of " + strings.Join(o.Keys, ", ")
}
