package reconcile

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
)

// Event handlers map informer events to Requests. They run on the informers' goroutines,
// so they only look up indexes and enqueue: never a list, never a request to the server.

func (r *Runner) parentHandler(res int) cache.ResourceEventHandler {
	ignoreStatus := r.parents[res].IgnoreStatusChanges
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.enqueueParent(res, obj) },
		UpdateFunc: func(old, cur any) {
			if ignoreStatus && onlyStatusChanged(old, cur) {
				return
			}
			if u, ok := cur.(*unstructured.Unstructured); ok {
				if key, err := cache.MetaNamespaceKeyFunc(u); err == nil && r.overlay.parentEcho(Request{Resource: res, Key: key}, u) {
					return // the echo of the engine's own status write
				}
			}
			r.enqueueParent(res, cur)
		},
		DeleteFunc: func(obj any) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err == nil {
				r.setCount(Request{Resource: res, Key: key}, 0, true)
			}
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if f, ok := r.cfg.Kind.(ParentForgetter); ok {
					f.Forget(u)
				}
				if err == nil {
					r.forgetRelated(Request{Resource: res, Key: key}, u.GetUID())
					r.overlay.forgetParent(Request{Resource: res, Key: key}, u.GetUID())
				}
			}
		},
	}
}

// enqueueParent enqueues a parent the controller selects, or one that still holds its
// finalizer and must be finalized.
func (r *Runner) enqueueParent(res int, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if !r.cfg.Kind.Selects(res, u) &&
		!(r.cfg.Descriptor.FinalizeDeselected && slices.Contains(u.GetFinalizers(), r.finalizer)) {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(u); err == nil {
		r.queue.Add(Request{Resource: res, Key: key})
	}
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

// childHandler routes the events of child rule's objects. The echo of the engine's own
// write (the cache reaching the version the write stored) starts no reconcile: the reconcile
// that wrote already saw it (writtenOverlay). Nor do the adds of the handler's initial list:
// every parent is enqueued by its own, and a child's events only ever reconcile parents.
func (r *Runner) childHandler(rule int) cache.ResourceEventHandler {
	filter, _ := r.cfg.Kind.(ChildFilter)
	routes := func(u *unstructured.Unstructured) bool { return filter == nil || filter.RoutesChild(u) }
	return laterAdds{cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok && routes(u) && !r.overlay.echo(rule, u) {
				r.routeChild(u)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if !ok1 || !ok2 || !routes(o) && !routes(c) || r.overlay.echo(rule, c) {
				return
			}
			oldRef, curRef := index.ControllerRef(o), index.ControllerRef(c)
			if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
				// The previous owner lost it: let it see the change.
				r.routeOwned(o, oldRef.APIVersion, oldRef.Kind, oldRef.Name)
			}
			// An orphan is routed to candidate parents only when its labels changed,
			// or when it just became an orphan.
			if curRef == nil && oldRef != nil || curRef != nil ||
				!maps.Equal(o.GetLabels(), c.GetLabels()) {
				r.routeChild(c)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			// Parents that wanted the name it held can now have their child.
			for _, req := range r.overlay.deleted(rule, u) {
				r.queue.Add(req)
			}
			if !routes(u) {
				return
			}
			// Orphans disappearing concern no other parent.
			if ref := index.ControllerRef(u); ref != nil {
				r.routeOwned(u, ref.APIVersion, ref.Kind, ref.Name)
			}
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

// inputHandler routes input events to the parents the InputRouter names, for the input as
// it was and as it is.
func (r *Runner) inputHandler() cache.ResourceEventHandler {
	router := r.cfg.Kind.(InputRouter)
	route := func(objs ...any) {
		indexers := make([]cache.Indexer, len(r.parents))
		for i, p := range r.parents {
			indexers[i] = p.informer.Indexer()
		}
		seen := map[Request]bool{}
		for _, obj := range objs {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			for _, req := range router.RouteInput(u, indexers) {
				if !seen[req] {
					seen[req] = true
					r.queue.Add(req)
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { route(obj) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
				return // a relist: parents resync on their own schedule
			}
			route(old, cur)
		},
		DeleteFunc: func(obj any) { route(obj) },
	}
}

// routeChild enqueues the owner of a controlled child, or the candidate parents of an orphan.
func (r *Runner) routeChild(u *unstructured.Unstructured) {
	if ref := index.ControllerRef(u); ref != nil {
		r.routeOwned(u, ref.APIVersion, ref.Kind, ref.Name)
		return
	}
	router, ok := r.cfg.Kind.(OrphanRouter)
	if !ok || u.GetDeletionTimestamp() != nil {
		return
	}
	indexers := make([]cache.Indexer, len(r.parents))
	for i, p := range r.parents {
		indexers[i] = p.informer.Indexer()
	}
	for _, req := range router.RouteOrphan(u, indexers) {
		obj, exists, _ := r.parents[req.Resource].informer.Indexer().GetByKey(req.Key)
		if exists {
			r.enqueueParent(req.Resource, obj)
		}
	}
}

// routeOwned enqueues the parent a ControllerRef names, when it is of one of the
// controller's parent resources (by group and kind: the version does not matter).
func (r *Runner) routeOwned(child *unstructured.Unstructured, apiVersion, kind, name string) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return
	}
	for i, p := range r.parents {
		if kind != p.GVK.Kind || gv.Group != p.GVK.Group {
			continue
		}
		key := name
		if p.Namespaced {
			key = child.GetNamespace() + "/" + name
		}
		r.queue.Add(Request{Resource: i, Key: key})
	}
}
