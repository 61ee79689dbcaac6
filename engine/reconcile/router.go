package reconcile

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/informers"
)

// A router is the one event handler of a shared informer (informers.Informer.Attach): it
// hands each event to the runners it can concern, found through indexes, never by asking
// every runner. Runners subscribe in up to three roles:
//
//   - parent: indexed by one equality requirement of the controller's label selector
//     (key=value; an In requirement subscribes each value), else by the namespace a confined
//     controller is held to, else on a short list that gets every event; and by the
//     controller's finalizer. An event reaches the subscribers of every label, finalizer and
//     namespace of the object as it was and as it is; each checks its selector exactly.
//   - child: an owned child reaches the runners the parent its ControllerRef names reaches
//     as a parent (looked up in that parent's router); a child beyond its parent's
//     namespace the runners of the parent its parent UID label names (looked up by the
//     parents' UID index, labelledSubs), whether or not it is being deleted; an orphan the
//     adopting runners of the candidate parents whose selector term (index.SelectorTerm) its
//     labels can match; a deleted object also the runners waiting for its name
//     (writtenOverlay.waitFor).
//   - input: every event (a map function decides; only MapControllers and rollouts have
//     inputs).
//
// Handlers are called on the informer's one delivery goroutine, in no particular order (each
// only enqueues into its own runner's queue), with the router's lock released. A runner
// subscribing to a running informer is handed, as initial-list adds on its own goroutine
// (so concurrently with events: handlers must be safe for that, as enqueueing is), the cached
// objects its parent keys select (through index.Label, index.Finalizer, the namespace index)
// and every cached input.
type router struct {
	inf *informers.Informer

	mu          sync.RWMutex
	byLabel     map[string]map[*parentSub]bool // "k=v"
	byFinalizer map[string]map[*parentSub]bool
	byNamespace map[string]map[*parentSub]bool
	anyParent   map[*parentSub]bool
	children    map[*Runner][]*childSub
	owners      map[schema.GroupKind]map[*router]int // parent routers of the children's owners, by subscribers
	waiting     map[string]map[*childSub]bool        // "ns/name" of a child name some parent waits for
	inputs      map[*inputSub]bool
}

type parentSub struct {
	r      *Runner
	h      cache.ResourceEventHandler
	labels []string // index.LabelKey of the selector's equality requirement; none: by namespace or any
	ns     string
	final  string
}

type childSub struct {
	r      *Runner
	rule   int
	h      cache.ResourceEventHandler
	owners []ownerRoute
	adopts bool
}

// ownerRoute is one parent resource of a child subscriber.
type ownerRoute struct {
	gk         schema.GroupKind
	namespaced bool
	parents    *router
}

type inputSub struct{ h cache.ResourceEventHandler }

const routerName = "metascript/reconcile-router"

// routerOf returns the router of inf, attaching it on first use.
func routerOf(inf *informers.Informer) (*router, error) {
	v, err := inf.Attach(routerName, func() (any, cache.ResourceEventHandler) {
		rt := &router{inf: inf, byLabel: map[string]map[*parentSub]bool{}, byFinalizer: map[string]map[*parentSub]bool{},
			byNamespace: map[string]map[*parentSub]bool{}, anyParent: map[*parentSub]bool{}, children: map[*Runner][]*childSub{},
			owners: map[schema.GroupKind]map[*router]int{}, waiting: map[string]map[*childSub]bool{}, inputs: map[*inputSub]bool{}}
		return rt, rt
	})
	if err != nil {
		return nil, err
	}
	return v.(*router), nil
}

// selectorLabels returns the Label keys a label selector needs one of: those of its first
// equality (=, ==, In) requirement; none when it has no such requirement.
func selectorLabels(sel labels.Selector) []string {
	if sel == nil {
		return nil
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			var out []string
			for _, v := range r.Values().List() {
				out = append(out, index.LabelKey(r.Key(), v))
			}
			return out
		}
	}
	return nil
}

func addTo[K comparable, S comparable](m map[K]map[S]bool, k K, s S) {
	if m[k] == nil {
		m[k] = map[S]bool{}
	}
	m[k][s] = true
}

func removeFrom[K comparable, S comparable](m map[K]map[S]bool, k K, s S) {
	delete(m[k], s)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// subscribeParent adds s and hands it the cached objects it may select.
func (rt *router) subscribeParent(s *parentSub) error {
	if err := index.RegisterRouteIndexes(rt.inf); err != nil {
		return err
	}
	rt.mu.Lock()
	switch {
	case len(s.labels) > 0:
		for _, l := range s.labels {
			addTo(rt.byLabel, l, s)
		}
	case s.ns != "":
		addTo(rt.byNamespace, s.ns, s)
	default:
		rt.anyParent[s] = true
	}
	if s.final != "" {
		addTo(rt.byFinalizer, s.final, s)
	}
	rt.mu.Unlock()
	// After the subscription, so that an object changing meanwhile reaches it either way.
	idx := rt.inf.Indexer()
	var objs []any
	switch {
	case len(s.labels) > 0:
		for _, l := range s.labels {
			found, _ := idx.ByIndex(index.Label, l)
			objs = append(objs, found...)
		}
	case s.ns != "":
		objs, _ = idx.ByIndex(cache.NamespaceIndex, s.ns)
	default:
		objs = idx.List()
	}
	if s.final != "" {
		found, _ := idx.ByIndex(index.Finalizer, s.final)
		objs = append(objs, found...)
	}
	for _, o := range objs {
		s.h.OnAdd(o, true)
	}
	return nil
}

func (rt *router) unsubscribeParent(s *parentSub) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, l := range s.labels {
		removeFrom(rt.byLabel, l, s)
	}
	removeFrom(rt.byNamespace, s.ns, s)
	delete(rt.anyParent, s)
	if s.final != "" {
		removeFrom(rt.byFinalizer, s.final, s)
	}
}

// parentSubs adds to out the parent subscribers objects may concern. Call with rt.mu held.
func (rt *router) parentSubs(out map[*parentSub]bool, objs ...*unstructured.Unstructured) {
	for s := range rt.anyParent {
		out[s] = true
	}
	for _, u := range objs {
		if u == nil {
			continue
		}
		if len(rt.byLabel) > 0 {
			for k, v := range u.GetLabels() {
				for s := range rt.byLabel[index.LabelKey(k, v)] {
					out[s] = true
				}
			}
		}
		if len(rt.byFinalizer) > 0 {
			for _, f := range u.GetFinalizers() {
				for s := range rt.byFinalizer[f] {
					out[s] = true
				}
			}
		}
		for s := range rt.byNamespace[u.GetNamespace()] {
			out[s] = true
		}
	}
}

// runnersOf returns the runners that subscribe to parent as a parent.
func (rt *router) runnersOf(parent *unstructured.Unstructured) map[*Runner]bool {
	subs := map[*parentSub]bool{}
	rt.mu.RLock()
	rt.parentSubs(subs, parent)
	rt.mu.RUnlock()
	out := make(map[*Runner]bool, len(subs))
	for s := range subs {
		out[s.r] = true
	}
	return out
}

func (rt *router) subscribeChild(s *childSub) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.children[s.r] = append(rt.children[s.r], s)
	for _, o := range s.owners {
		if rt.owners[o.gk] == nil {
			rt.owners[o.gk] = map[*router]int{}
		}
		rt.owners[o.gk][o.parents]++
	}
}

func (rt *router) unsubscribeChild(s *childSub) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	subs := rt.children[s.r]
	for i, c := range subs {
		if c == s {
			subs = append(subs[:i:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) == 0 {
		delete(rt.children, s.r)
	} else {
		rt.children[s.r] = subs
	}
	for _, o := range s.owners {
		if rt.owners[o.gk][o.parents]--; rt.owners[o.gk][o.parents] <= 0 {
			delete(rt.owners[o.gk], o.parents)
			if len(rt.owners[o.gk]) == 0 {
				delete(rt.owners, o.gk)
			}
		}
	}
	for k, subs := range rt.waiting {
		if subs[s] {
			removeFrom(rt.waiting, k, s)
		}
	}
}

// wait makes the deletion of the child called namespace/name reach s.
func (rt *router) wait(s *childSub, namespace, name string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	addTo(rt.waiting, namespace+"/"+name, s)
}

// childSubs adds to out the child subscribers obj concerns, as the owner its ControllerRef
// names or, an orphan, as the candidate parents that may adopt it. The parent routers are
// asked with rt.mu released: a resource may be its own children's parent.
func (rt *router) childSubs(out map[*childSub]bool, u *unstructured.Unstructured) {
	if u == nil {
		return
	}
	ref := index.ControllerRef(u)
	if ref == nil {
		if uid, ok := index.ParentUIDLabel(u); ok { // index.LabelledParent, ref known to be nil
			rt.labelledSubs(out, uid)
			return
		}
	}
	var gk schema.GroupKind
	if ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return
		}
		gk = schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	} else if u.GetDeletionTimestamp() != nil {
		return
	}
	var routers []*router
	rt.mu.RLock()
	if ref != nil {
		for parents := range rt.owners[gk] {
			routers = append(routers, parents)
		}
	} else {
		for _, byParent := range rt.owners {
			for parents := range byParent {
				routers = append(routers, parents)
			}
		}
	}
	rt.mu.RUnlock()
	runners := map[*Runner]bool{}
	everyAdopter := false
	for _, parents := range routers {
		idx := parents.inf.Indexer()
		if ref != nil {
			for _, key := range []string{u.GetNamespace() + "/" + ref.Name, ref.Name} {
				if obj, ok, _ := idx.GetByKey(key); ok {
					maps.Copy(runners, parents.runnersOf(obj.(*unstructured.Unstructured)))
				}
			}
			continue
		}
		// An orphan: the parents whose spec.selector it may match (index.SelectorTerm), or
		// every adopting subscriber when a parent informer has no such index.
		if !parents.inf.HasIndex(index.SelectorTerm) {
			everyAdopter = true
			continue
		}
		for _, ns := range []string{u.GetNamespace(), ""} {
			keys := []string{index.AnySelectorKey(ns)}
			for k, v := range u.GetLabels() {
				keys = append(keys, index.SelectorTermKey(ns, k, v))
			}
			for _, key := range keys {
				found, _ := idx.ByIndex(index.SelectorTerm, key)
				for _, p := range found {
					maps.Copy(runners, parents.runnersOf(p.(*unstructured.Unstructured)))
				}
			}
		}
	}
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	if everyAdopter {
		for _, subs := range rt.children {
			for _, s := range subs {
				if s.adopts {
					out[s] = true
				}
			}
		}
	}
	for r := range runners {
		for _, s := range rt.children[r] {
			if ref != nil || s.adopts {
				out[s] = true
			}
		}
	}
}

func (rt *router) subscribeInput(s *inputSub) {
	rt.mu.Lock()
	rt.inputs[s] = true
	rt.mu.Unlock()
	for _, o := range rt.inf.Indexer().List() {
		s.h.OnAdd(o, true)
	}
}

func (rt *router) unsubscribeInput(s *inputSub) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.inputs, s)
}

// handlers returns every handler an event concerns, each once.
func (rt *router) handlers(deleted bool, objs ...*unstructured.Unstructured) []cache.ResourceEventHandler {
	parents := map[*parentSub]bool{}
	children := map[*childSub]bool{}
	rt.mu.RLock()
	rt.parentSubs(parents, objs...)
	hasChildren := len(rt.children) > 0
	var out []cache.ResourceEventHandler
	for s := range rt.inputs {
		out = append(out, s.h)
	}
	rt.mu.RUnlock()
	if hasChildren {
		for i, u := range objs {
			// An update's old object at the same resourceVersion (a relist) routes alike.
			if u != nil && (i == 0 || objs[0] == nil || u.GetResourceVersion() != objs[0].GetResourceVersion()) {
				rt.childSubs(children, u)
			}
		}
		if deleted && objs[0] != nil {
			k := objs[0].GetNamespace() + "/" + objs[0].GetName()
			rt.mu.Lock()
			for s := range rt.waiting[k] {
				children[s] = true
			}
			delete(rt.waiting, k)
			rt.mu.Unlock()
		}
	}
	for s := range parents {
		out = append(out, s.h)
	}
	for s := range children {
		out = append(out, s.h)
	}
	return out
}

func (rt *router) OnAdd(obj any, initial bool) {
	u, _ := obj.(*unstructured.Unstructured)
	for _, h := range rt.handlers(false, u) {
		h.OnAdd(obj, initial)
	}
}

func (rt *router) OnUpdate(old, cur any) {
	o, _ := old.(*unstructured.Unstructured)
	c, _ := cur.(*unstructured.Unstructured)
	for _, h := range rt.handlers(false, c, o) {
		h.OnUpdate(old, cur)
	}
}

func (rt *router) OnDelete(obj any) {
	u, _ := informers.Object(obj)
	for _, h := range rt.handlers(true, u) {
		h.OnDelete(obj)
	}
}
