package reconcile

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// writtenOverlay remembers what the engine's own writes stored, from the server's answers,
// until the informer caches have seen them. Reconciles read children through it, so that a
// reconcile following the engine's own writes sees them although the cache lags, and the
// events those writes cause are recognized as their echo and start no reconcile: what the
// ReplicaSet controller's expectations do, keyed by resourceVersion.
//
// An entry stands until the cache holds the object at its resourceVersion or a newer one.
// resourceVersions are compared as the integers etcd makes them; an entry whose version is
// not one, or that no echo ended within overlayTTL, gives way to the cache. Safe for
// concurrent use.
type writtenOverlay struct {
	mu      sync.Mutex
	objects map[overlayKey]overlayEntry
	// byParent indexes objects by the parent whose write stored them: every gather lists
	// its parent's.
	byParent map[types.UID]map[overlayKey]struct{}
	parents  map[Request]overlayEntry // the parents' own writes (status), by the same rule
	// waiting holds, per child name, the parents that want it while another object holds
	// it (a ChildConflict), so that its deletion reconciles them.
	waiting map[overlayKey]map[Request]bool
}

// overlayKey names one child object of one rule.
type overlayKey struct {
	rule      int
	namespace string
	name      string
}

type overlayEntry struct {
	obj    *unstructured.Unstructured
	parent types.UID // the parent whose write stored obj
	at     time.Time
}

// overlayTTL bounds how long a write's answer overrides the cache without an echo.
const overlayTTL = time.Minute

func newWrittenOverlay() *writtenOverlay {
	return &writtenOverlay{objects: map[overlayKey]overlayEntry{}, byParent: map[types.UID]map[overlayKey]struct{}{},
		parents: map[Request]overlayEntry{}, waiting: map[overlayKey]map[Request]bool{}}
}

// put and drop keep objects and byParent together; o.mu is held.
func (o *writtenOverlay) put(k overlayKey, e overlayEntry) {
	o.drop(k)
	o.objects[k] = e
	if o.byParent[e.parent] == nil {
		o.byParent[e.parent] = map[overlayKey]struct{}{}
	}
	o.byParent[e.parent][k] = struct{}{}
}

func (o *writtenOverlay) drop(k overlayKey) {
	e, ok := o.objects[k]
	if !ok {
		return
	}
	delete(o.objects, k)
	delete(o.byParent[e.parent], k)
	if len(o.byParent[e.parent]) == 0 {
		delete(o.byParent, e.parent)
	}
}

// recordChild keeps a child as a write of parent stored it.
func (o *writtenOverlay) recordChild(rule int, parent types.UID, stored *unstructured.Unstructured) {
	if stored == nil || stored.GetResourceVersion() == "" {
		return
	}
	dropManagedFields(stored)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.put(overlayKey{rule, stored.GetNamespace(), stored.GetName()}, overlayEntry{obj: stored, parent: parent, at: time.Now()})
}

// recordParent keeps a parent as the engine's write of its status stored it.
func (o *writtenOverlay) recordParent(req Request, stored *unstructured.Unstructured) {
	if stored == nil || stored.GetResourceVersion() == "" {
		return
	}
	dropManagedFields(stored)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parents[req] = overlayEntry{obj: stored, at: time.Now()}
}

// view returns what a reconcile of parent should see of a child the cache holds as cached
// (nil when the cache has none): the written object while the cache has not caught up with
// it, else cached. ok is false when the overlay has nothing newer.
func (o *writtenOverlay) view(rule int, parent types.UID, namespace, name string, cached *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := overlayKey{rule, namespace, name}
	e, ok := o.objects[k]
	if !ok || e.parent != parent {
		return nil, false
	}
	if time.Since(e.at) > overlayTTL || cached != nil && !older(cached, e.obj) {
		o.drop(k)
		return nil, false
	}
	return e.obj, true
}

// written lists the children of parent the engine wrote, within the TTL, whether or not the
// cache holds them yet.
func (o *writtenOverlay) written(parent types.UID, rule int) []*unstructured.Unstructured {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*unstructured.Unstructured
	for k := range o.byParent[parent] {
		if e := o.objects[k]; k.rule == rule && time.Since(e.at) <= overlayTTL {
			out = append(out, e.obj)
		}
	}
	return out
}

// echo reports whether a child event is the echo of the engine's own write: the cache now
// holds obj at the version the write stored. Any event at that version or a newer one ends
// the entry.
func (o *writtenOverlay) echo(rule int, obj *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := overlayKey{rule, obj.GetNamespace(), obj.GetName()}
	e, ok := o.objects[k]
	if !ok || older(obj, e.obj) {
		return false
	}
	o.drop(k)
	return obj.GetResourceVersion() == e.obj.GetResourceVersion()
}

// parentView is view for a parent: the object the engine's last write of it stored while
// the cache holds an older version.
func (o *writtenOverlay) parentView(req Request, cached *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.parents[req]
	if !ok {
		return nil, false
	}
	if time.Since(e.at) > overlayTTL || !older(cached, e.obj) {
		delete(o.parents, req)
		return nil, false
	}
	return e.obj, true
}

// parentEcho is echo for a parent's event.
func (o *writtenOverlay) parentEcho(req Request, obj *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.parents[req]
	if !ok || older(obj, e.obj) {
		return false
	}
	delete(o.parents, req)
	return obj.GetResourceVersion() == e.obj.GetResourceVersion()
}

// waitFor records that parent req wants a child name another object holds.
func (o *writtenOverlay) waitFor(rule int, namespace, name string, req Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := overlayKey{rule, namespace, name}
	if o.waiting[k] == nil {
		o.waiting[k] = map[Request]bool{}
	}
	o.waiting[k][req] = true
}

// deleted is told of a child's deletion. It forgets the engine's write of that object and
// returns, and forgets, the parents waiting for its name.
func (o *writtenOverlay) deleted(rule int, obj *unstructured.Unstructured) []Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := overlayKey{rule, obj.GetNamespace(), obj.GetName()}
	if e, ok := o.objects[k]; ok && e.obj.GetUID() == obj.GetUID() {
		o.drop(k)
	}
	var out []Request
	for req := range o.waiting[k] {
		out = append(out, req)
	}
	delete(o.waiting, k)
	return out
}

// forgetParent drops what is kept of a deleted parent.
func (o *writtenOverlay) forgetParent(req Request, uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.parents, req)
	for k := range o.byParent[uid] {
		o.drop(k)
	}
	for k, reqs := range o.waiting {
		delete(reqs, req)
		if len(reqs) == 0 {
			delete(o.waiting, k)
		}
	}
}

// older reports whether a holds an older version than b. Versions that are not integers
// (not etcd's) cannot be ordered: a is then taken as not older, so the cache wins.
func older(a, b *unstructured.Unstructured) bool {
	if a.GetUID() != b.GetUID() {
		return false // another object under the same name: the cache's is what exists
	}
	va, err1 := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	vb, err2 := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return err1 == nil && err2 == nil && va < vb
}

func dropManagedFields(u *unstructured.Unstructured) {
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
}
