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
	users    int // parents whose bound rules read it
}

// ensure starts the informers of ress that do not run yet and waits for every one of them
// to sync, or ctx to end.
func (t *Tracker[P]) ensure(ctx context.Context, ress []resources.Resource) error {
	var wait []cache.InformerSynced
	t.mu.Lock()
	for _, res := range ress {
		if src := t.sources[res.GVR]; src != nil {
			wait = append(wait, src.informer.HasSynced)
			continue
		}
		inf := t.informers.Acquire(res.GVR)
		reg, err := inf.AddEventHandler(t.handler(res.GVR))
		if err != nil {
			t.informers.Release(inf)
			t.mu.Unlock()
			return err
		}
		t.sources[res.GVR] = &source{informer: inf, reg: reg}
		wait = append(wait, inf.HasSynced)
	}
	t.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), wait...) {
		return fmt.Errorf("caches of related resources did not sync: %w", ctx.Err())
	}
	return nil
}

// cache is the cache of a related resource, nil when none runs.
func (t *Tracker[P]) cache(res resources.Resource) cache.Indexer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if src := t.sources[res.GVR]; src != nil {
		return src.informer.Indexer()
	}
	return nil
}

// prune stops the informers no bound rule names: those started for a reconcile that
// failed before it bound its rules.
func (t *Tracker[P]) prune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pruneLocked()
}

func (t *Tracker[P]) pruneLocked() {
	for gvr, src := range t.sources {
		if src.users <= 0 {
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
	nsLabels := namespaceLabels(t.cache)
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
			if gvr == namespaces.GVR && ok1 && ok2 && !maps.Equal(o.GetLabels(), c.GetLabels()) {
				for _, p := range t.index.namespaceLabelUsers() {
					t.enqueue(p)
				}
			}
		},
		DeleteFunc: func(obj any) { route(obj) },
	}
}
