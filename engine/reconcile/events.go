package reconcile

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/informers"
)

// Event handlers map informer events to Requests, as Config.Watches declares, and end in one
// enqueue. They run on the informers' goroutines, so they only look up indexes and enqueue:
// never a list, never a request to the server.

// enqueue adds the requests of lists: what an object maps to as it was and as it is. The work
// queue keeps a request that is already waiting once, so one named twice is reconciled once.
// A request naming a parent outside a confined controller's namespace is dropped here, the
// one gate every route passes (confine.go), and so is one naming a parent another replica
// of the engine owns (Env.Shard).
//
// trigger says what the requests come from (the parent, a child, an input, a related object,
// a resync), for the trace.
func (r *Runner) enqueue(trigger string, lists ...[]Request) {
	for _, list := range lists {
		for _, req := range list {
			if !r.outside(req) && (r.cfg.Shard == nil || r.cfg.Shard.Owns(r.shardKey(req))) {
				r.setTrigger(req, trigger)
				r.queue.Add(req)
			}
		}
	}
}

func (r *Runner) parentHandler(res int) cache.ResourceEventHandler {
	ignoreStatus := r.parents[res].IgnoreStatusChanges
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if req, acts := r.trackParent(res, obj); acts {
				r.enqueue("parent", []Request{req})
			}
		},
		UpdateFunc: func(old, cur any) {
			req, acts := r.trackParent(res, cur)
			if ignoreStatus && onlyStatusChanged(old, cur) {
				return
			}
			if u, ok := cur.(*unstructured.Unstructured); ok && req.Key != "" && r.overlay.parentEcho(req, u) {
				return // the echo of the engine's own status write
			}
			if acts {
				r.enqueue("parent", []Request{req})
			}
		},
		DeleteFunc: func(obj any) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err == nil {
				r.setSelected(Request{Resource: res, Key: key}, false)
			}
			if u, ok := informers.Object(obj); ok {
				if r.cfg.Watches.Forget != nil {
					r.cfg.Watches.Forget(u)
				}
				if err == nil {
					if r.related != nil {
						r.related.Forget(Request{Resource: res, Key: key}, u.GetUID())
					}
					r.overlay.forgetParent(Request{Resource: res, Key: key}, u.GetUID())
				}
			}
		},
	}
}

// trackParent records whether the controller selects parent obj of resource res as it is now,
// for Counts, and returns its request and whether the controller acts on it (acts). A key
// that cannot be made returns the zero Request.
func (r *Runner) trackParent(res int, obj any) (req Request, acts bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return Request{}, false
	}
	key, err := cache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return Request{}, false
	}
	req = Request{Resource: res, Key: key}
	selected := r.cfg.Kind.Selects(res, u)
	r.setSelected(req, selected && !r.outside(req))
	if selected {
		r.widenOrphans(u)
	}
	return req, r.actsOn(u, selected)
}

// actsOn reports whether the controller acts on a parent: it selects it (selected), or the
// parent still holds its finalizer and must be finalized.
func (r *Runner) actsOn(parent *unstructured.Unstructured, selected bool) bool {
	return selected || r.built.Descriptor.FinalizeDeselected && slices.Contains(parent.GetFinalizers(), r.finalizer)
}

// onlyStatusChanged reports whether nothing but status (and resourceVersion/managedFields)
// differs between two versions of a parent.
func onlyStatusChanged(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	c, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return false
	}
	return o.GetGeneration() == c.GetGeneration() &&
		maps.Equal(o.GetLabels(), c.GetLabels()) &&
		maps.Equal(o.GetAnnotations(), c.GetAnnotations()) &&
		slices.Equal(o.GetFinalizers(), c.GetFinalizers()) &&
		(o.GetDeletionTimestamp() == nil) == (c.GetDeletionTimestamp() == nil)
}

// childHandler routes the events of child rule's objects: to the owner their ControllerRef
// names, a child beyond its parent's namespace's to the parent its label names (beyond.go),
// and an orphan's to the parents Watches.Orphans finds. The echo of the engine's own
// write (the cache reaching the version the write stored) starts no reconcile: the reconcile
// that wrote already saw it (writtenOverlay). Nor do the adds of the handler's initial list:
// every parent is enqueued by its own, and a child's events only ever reconcile parents.
func (r *Runner) childHandler(rule int) cache.ResourceEventHandler {
	owns := func(u *unstructured.Unstructured) bool { return r.cfg.Watches.Owns == nil || r.cfg.Watches.Owns(u) }
	return laterAdds{cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok && owns(u) && !r.overlay.echo(rule, u) {
				r.enqueue("child", r.childRequests(u))
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if !ok1 || !ok2 || !owns(o) && !owns(c) || r.overlay.echo(rule, c) {
				return
			}
			var was, is []Request
			oldRef, curRef := index.ControllerRef(o), index.ControllerRef(c)
			if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
				was = r.ownerRequest(o, oldRef) // the previous owner lost it: let it see the change
			}
			// An orphan concerns candidate parents only when its labels changed, or when it
			// just became an orphan.
			relabelled := !maps.Equal(o.GetLabels(), c.GetLabels())
			switch {
			case curRef != nil || oldRef != nil:
				is = r.childRequests(c)
			case relabelled:
				is = r.childRequests(c)
				was = r.labelledRequests(o) // the parent that claimed it by label, if it lost it
			default:
				is = r.labelledRequests(c) // a child beyond its parent's namespace: its parent only
			}
			r.enqueue("child", was, is)
		},
		DeleteFunc: func(obj any) {
			u, ok := informers.Object(obj)
			if !ok {
				return
			}
			// Parents that wanted the name it held can now have their child; orphans
			// disappearing concern no other parent.
			var owner []Request
			if ref := index.ControllerRef(u); ref != nil && owns(u) {
				owner = r.ownerRequest(u, ref)
			} else if owns(u) {
				owner = r.labelledRequests(u) // a parent being deleted may wait for it to go
			}
			r.enqueue("child", r.overlay.deleted(rule, u), owner)
		},
	}}
}

// laterAdds is a handler that ignores the adds of its initial list: when a controller
// starts, or is replaced after an edit, with every child already cached, those would only
// enqueue again parents that are enqueued already, and reconcile again the ones done since.
type laterAdds struct {
	cache.ResourceEventHandlerFuncs
}

func (h laterAdds) OnAdd(obj any, isInInitialList bool) {
	if !isInInitialList {
		h.ResourceEventHandlerFuncs.OnAdd(obj, false)
	}
}

// inputHandler routes the events of an input resource through its map function, or to the
// owner its ControllerRef names when it has none, for the input as it was and as it is.
func (r *Runner) inputHandler(mapFn MapFunc) cache.ResourceEventHandler {
	requests := func(obj any) []Request {
		u, ok := informers.Object(obj)
		if !ok {
			return nil
		}
		if mapFn == nil {
			if ref := index.ControllerRef(u); ref != nil {
				return r.ownerRequest(u, ref)
			}
			return nil
		}
		return mapFn(u, r.parentIndexers())
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.enqueue("input", requests(obj)) },
		UpdateFunc: func(old, cur any) {
			if !informers.Unchanged(old, cur) {
				r.enqueue("input", requests(old), requests(cur))
			}
		},
		DeleteFunc: func(obj any) { r.enqueue("input", requests(obj)) },
	}
}

func (r *Runner) parentIndexers() []cache.Indexer {
	out := make([]cache.Indexer, len(r.parents))
	for i, p := range r.parents {
		out[i] = p.indexer
	}
	return out
}

// childRequests is the owner of a controlled child, the parent of a child claimed by label,
// or the candidate parents of an orphan that the controller selects.
func (r *Runner) childRequests(u *unstructured.Unstructured) []Request {
	if ref := index.ControllerRef(u); ref != nil {
		return r.ownerRequest(u, ref)
	}
	if _, labelled := index.LabelledParent(u); labelled {
		return r.labelledRequests(u) // claimed by label, adopted by none
	}
	if r.cfg.Watches.Orphans == nil || u.GetDeletionTimestamp() != nil {
		return nil
	}
	var out []Request
	for _, req := range r.cfg.Watches.Orphans(u, r.parentIndexers()) {
		obj, exists, _ := r.parents[req.Resource].indexer.GetByKey(req.Key)
		if u, ok := obj.(*unstructured.Unstructured); exists && ok && r.actsOn(u, r.cfg.Kind.Selects(req.Resource, u)) {
			out = append(out, req)
		}
	}
	return out
}

// ownerRequest is the parent a ControllerRef names, when it is of one of the controller's
// parent resources (by group and kind: the version does not matter).
func (r *Runner) ownerRequest(child *unstructured.Unstructured, ref *metav1.OwnerReference) []Request {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	var out []Request
	for i, p := range r.parents {
		if ref.Kind != p.GVK.Kind || gv.Group != p.GVK.Group {
			continue
		}
		key := ref.Name
		if p.Namespaced {
			key = child.GetNamespace() + "/" + ref.Name
		}
		out = append(out, Request{Resource: i, Key: key})
	}
	return out
}
