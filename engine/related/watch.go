package related

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/resources"
)

// source is the informer of one related resource and the tracker's handler on it. It runs
// from the first reconcile whose rules name the resource until no bound rule does.
type source struct {
	informer *informers.Informer
	reg      cache.ResourceEventHandlerRegistration
}

// ensure starts the informers of ress that do not run yet, waits for every one of them to
// sync, or ctx to end, and returns their caches.
func (t *Tracker[P]) ensure(ctx context.Context, ress []resources.Resource) (map[schema.GroupVersionResource]cache.Indexer, error) {
	caches := make(map[schema.GroupVersionResource]cache.Indexer, len(ress))
	var wait []cache.InformerSynced
	t.mu.Lock()
	for _, res := range ress {
		src := t.sources[res.GVR]
		if src == nil {
			var err error
			if src, err = t.startLocked(res); err != nil {
				t.mu.Unlock()
				return nil, err
			}
		}
		caches[res.GVR] = src.informer.Indexer()
		wait = append(wait, src.informer.HasSynced)
	}
	t.mu.Unlock()
	if !informers.WaitSynced(ctx, wait...) {
		return nil, fmt.Errorf("caches of related resources did not sync: %w", ctx.Err())
	}
	return caches, nil
}

// startLocked starts the informer of res, in the tracker's namespace, with the tracker's
// handler on it.
func (t *Tracker[P]) startLocked(res resources.Resource) (*source, error) {
	if t.namespace != "" && !res.Namespaced {
		return nil, fmt.Errorf("%s is cluster-scoped; the related objects of a controller confined to namespace %q are in it", res.GVR.GroupResource(), t.namespace)
	}
	inf := t.informers.AcquireFor(informers.Scope{GVR: res.GVR, Namespace: t.namespace}, informers.Need{})
	reg, err := inf.AddEventHandler(t.handler(res.GVR))
	if err != nil {
		t.informers.Release(inf)
		return nil, err
	}
	src := &source{informer: inf, reg: reg}
	t.sources[res.GVR] = src
	return src, nil
}

// cacheOf is the cache of a related resource, nil when none runs.
func (t *Tracker[P]) cacheOf(res resources.Resource) cache.Indexer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if src := t.sources[res.GVR]; src != nil {
		return src.informer.Indexer()
	}
	return nil
}

// prune stops the informers no bound rule names: those started for reconciles that failed
// before they bound their rules, and those a parent's rules stopped naming. It may stop one
// a reconcile under way has read and is about to bind; Bind starts it again.
func (t *Tracker[P]) prune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pruneLocked()
}

func (t *Tracker[P]) pruneLocked() {
	for gvr, src := range t.sources {
		if t.bound[gvr] <= 0 {
			t.stopLocked(gvr, src)
		}
	}
}

// stopLocked removes the tracker's handler from a source's informer and releases it.
func (t *Tracker[P]) stopLocked(gvr schema.GroupVersionResource, src *source) {
	_ = src.informer.RemoveEventHandler(src.reg)
	t.informers.Release(src.informer)
	delete(t.sources, gvr)
}

// handler routes the events of a related resource to the parents whose bound rules select
// the object as it was or as it is. A namespace's labels changing also reaches every parent
// selecting by namespace labels.
func (t *Tracker[P]) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	nsLabels := namespaceLabels(t.cacheOf)
	route := func(objs ...any) {
		seen := map[P]bool{}
		for _, obj := range objs {
			u, ok := informers.Object(obj)
			if !ok {
				continue
			}
			for _, p := range t.index.route(gvr, u, nsLabels) {
				if !seen[p] {
					seen[p] = true
					t.enqueue(p)
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { route(obj) },
		UpdateFunc: func(old, cur any) {
			if informers.Unchanged(old, cur) {
				return
			}
			route(old, cur)
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if gvr == Namespaces.GVR && ok1 && ok2 && !maps.Equal(o.GetLabels(), c.GetLabels()) {
				for _, p := range t.index.namespaceLabelUsers() {
					t.enqueue(p)
				}
			}
		},
		DeleteFunc: func(obj any) { route(obj) },
	}
}
