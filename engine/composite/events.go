package composite

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
)

// Event handlers map informer events to parent keys. They run on the informers' goroutines,
// so they only look up indexes and enqueue: never a list, never a request.

func (r *Runner) parentHandler() cache.ResourceEventHandler {
	ignoreStatus := r.cfg.Controller.Spec.ParentResource.IgnoreStatusChanges != nil &&
		*r.cfg.Controller.Spec.ParentResource.IgnoreStatusChanges
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.enqueueParent(obj) },
		UpdateFunc: func(old, cur any) {
			if ignoreStatus && onlyStatusChanged(old, cur) {
				return
			}
			r.enqueueParent(cur)
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				r.countsMu.Lock()
				delete(r.counts, key)
				r.countsMu.Unlock()
			}
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				r.selectors.forget(u.GetUID())
			}
		},
	}
}

func (r *Runner) enqueueParent(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !r.parentSel.Matches(labels.Set(u.GetLabels())) {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(u); err == nil {
		r.queue.Add(key)
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

func (r *Runner) childHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.routeChild(obj) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if !ok1 || !ok2 {
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
			// Orphans disappearing concern no parent.
			if ref := index.ControllerRef(u); ref != nil {
				r.routeOwned(u, ref.APIVersion, ref.Kind, ref.Name)
			}
		},
	}
}

// routeChild enqueues the owner of a controlled child, or the candidate parents of an orphan.
func (r *Runner) routeChild(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if ref := index.ControllerRef(u); ref != nil {
		r.routeOwned(u, ref.APIVersion, ref.Kind, ref.Name)
		return
	}
	if u.GetDeletionTimestamp() != nil {
		return
	}
	r.routeOrphan(u)
}

func (r *Runner) routeOwned(child *unstructured.Unstructured, apiVersion, kind, name string) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind != r.cfg.Parent.GVK.Kind || gv.Group != r.cfg.Parent.GVK.Group {
		return
	}
	key := name
	if r.cfg.Parent.Namespaced {
		key = child.GetNamespace() + "/" + name
	}
	r.queue.Add(key)
}

// routeOrphan enqueues the parents whose selector may match the orphan, found through the
// parent indexes: by UID label for generated selectors, by selector term otherwise.
func (r *Runner) routeOrphan(u *unstructured.Unstructured) {
	lbls := u.GetLabels()
	idx := r.parent.Indexer()
	if r.generateSelector() {
		uid, ok := lbls[ControllerUIDLabel]
		if !ok {
			return
		}
		objs, _ := idx.ByIndex(index.UID, uid)
		for _, p := range objs {
			r.enqueueParent(p)
		}
		return
	}
	ns := ""
	if r.cfg.Parent.Namespaced {
		ns = u.GetNamespace()
	}
	seen := map[string]bool{}
	consider := func(objs []any) {
		for _, obj := range objs {
			p, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			key, _ := cache.MetaNamespaceKeyFunc(p)
			if seen[key] {
				continue
			}
			seen[key] = true
			if sel, err := r.selectors.get(p); err == nil && sel.Matches(labels.Set(lbls)) {
				r.enqueueParent(p)
			}
		}
	}
	for k, v := range lbls {
		objs, _ := idx.ByIndex(index.SelectorTerm, index.SelectorTermKey(ns, k, v))
		consider(objs)
	}
	objs, _ := idx.ByIndex(index.SelectorTerm, index.AnySelectorKey(ns))
	consider(objs)
}

func (r *Runner) generateSelector() bool {
	g := r.cfg.Controller.Spec.GenerateSelector
	return g != nil && *g
}
