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
// An entry gives way to the cache as soon as the cache holds the object at its
// resourceVersion or a newer one, but it is ended only by the event of that version or a
// newer one (echo), which client-go delivers after it updated the cache: a reconcile reading
// the cache first must not make the echo unrecognisable. A write is also known while it is in
// flight (begin, end): an event of its object that arrives before the server's answer is held
// and judged against that answer. resourceVersions are compared as the integers etcd makes
// them; an entry whose version is not one, or that no echo ended within overlayTTL, gives way
// to the cache. Safe for concurrent use.
type writtenOverlay struct {
	mu      sync.Mutex
	objects map[overlayKey]overlayEntry
	// byParent indexes objects by the parent whose write stored them: every gather lists
	// its parent's.
	byParent map[types.UID]map[overlayKey]struct{}
	parents  map[Request]overlayEntry // the parents' own writes (status), by the same rule
	// flights are the writes whose answer has not come back, by child or by parent.
	flights       map[overlayKey]flight
	parentFlights map[Request]flight
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

// flight is one write in flight and the versions of its object that events brought
// meanwhile.
type flight struct {
	seen []*unstructured.Unstructured
}

// hold keeps an event's version of a flight's object, to be judged when the answer is back.
func (f *flight) hold(obj *unstructured.Unstructured) { f.seen = append(f.seen, obj) }

// landed judges the events held in flight by the write's answer stored (nil when the write
// failed or deleted): echoed when one was the write's own echo, again when any other was
// held. An event of another version is someone else's change, before or after the write,
// that the decision behind the write may not have seen.
func (f *flight) landed(stored *unstructured.Unstructured) (echoed, again bool) {
	for _, obj := range f.seen {
		if stored != nil && sameVersion(obj, stored) {
			echoed = true
		} else {
			again = true
		}
	}
	return echoed, again
}

func newWrittenOverlay() *writtenOverlay {
	return &writtenOverlay{objects: map[overlayKey]overlayEntry{}, byParent: map[types.UID]map[overlayKey]struct{}{},
		parents: map[Request]overlayEntry{}, waiting: map[overlayKey]map[Request]bool{},
		flights: map[overlayKey]flight{}, parentFlights: map[Request]flight{}}
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

// beginChild says that a write of the child named namespace/name of rule is about to be
// sent; endChild must follow.
func (o *writtenOverlay) beginChild(rule int, namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flights[overlayKey{rule, namespace, name}] = flight{}
}

// endChild ends the flight of a write of parent's child: stored is the server's answer when
// the write created or updated the child, and nil otherwise. The answer is kept until its
// echo, unless an event held in flight was the echo already. It reports whether an event
// held in flight was not the echo, so that the parent must be reconciled again.
func (o *writtenOverlay) endChild(rule int, namespace, name string, parent types.UID, stored *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := overlayKey{rule, namespace, name}
	f, ok := o.flights[k]
	delete(o.flights, k)
	keep, again := land(f, ok, stored)
	if keep != nil {
		o.put(k, overlayEntry{obj: keep, parent: parent, at: time.Now()})
	}
	return again
}

// beginParent and endParent are beginChild and endChild for the engine's write of a
// parent's own fields (its status).
func (o *writtenOverlay) beginParent(req Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parentFlights[req] = flight{}
}

func (o *writtenOverlay) endParent(req Request, stored *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	f, ok := o.parentFlights[req]
	delete(o.parentFlights, req)
	keep, again := land(f, ok, stored)
	if keep != nil {
		o.parents[req] = overlayEntry{obj: keep, at: time.Now()}
	}
	return again
}

// land judges flight f (when ok: there was one) by its write's answer stored: the answer to
// keep until its echo (nil when there is none, or its echo came in flight), and whether an
// event held in flight was someone else's change.
func land(f flight, ok bool, stored *unstructured.Unstructured) (keep *unstructured.Unstructured, again bool) {
	if stored != nil && stored.GetResourceVersion() == "" {
		stored = nil
	}
	echoed := false
	if ok {
		echoed, again = f.landed(stored)
	}
	if stored == nil || echoed {
		return nil, again
	}
	dropManagedFields(stored)
	return stored, again
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
	if time.Since(e.at) > overlayTTL {
		o.drop(k)
		return nil, false
	}
	if cached != nil && !older(cached, e.obj) {
		return nil, false // the cache caught up; the echo ends the entry
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
	if f, ok := o.flights[k]; ok {
		if e, ok := o.objects[k]; ok && sameVersion(e.obj, obj) {
			o.drop(k) // the echo of the write before this one
			return true
		}
		f.hold(obj) // judged when the write's answer is back
		o.flights[k] = f
		return true
	}
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
	if time.Since(e.at) > overlayTTL {
		delete(o.parents, req)
		return nil, false
	}
	if !older(cached, e.obj) {
		return nil, false // the cache caught up; the echo ends the entry
	}
	return e.obj, true
}

// parentEcho is echo for a parent's event.
func (o *writtenOverlay) parentEcho(req Request, obj *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.parentFlights[req]; ok {
		if e, ok := o.parents[req]; ok && sameVersion(e.obj, obj) {
			delete(o.parents, req) // the echo of the write before this one
			return true
		}
		f.hold(obj)
		o.parentFlights[req] = f
		return true
	}
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

// sameVersion reports whether a and b are one object at one resourceVersion.
func sameVersion(a, b *unstructured.Unstructured) bool {
	return a.GetUID() == b.GetUID() && a.GetResourceVersion() == b.GetResourceVersion()
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
