// Package informers shares one dynamic informer per GroupVersionResource among all
// controllers of the engine, reference-counted: the first Acquire starts it, the last Release
// stops it. Cached objects have metadata.managedFields dropped to save memory; nothing in
// the engine reads them from the cache.
package informers

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// Informer is one shared informer. Its Indexer holds *unstructured.Unstructured objects that
// callers must treat as read-only.
type Informer struct {
	GVR      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	stop     chan struct{}
	refs     int
	indexMu  sync.Mutex
	attached map[string]any // under indexMu
}

// Indexer is the informer's indexed store.
func (i *Informer) Indexer() cache.Indexer { return i.informer.GetIndexer() }

// HasSynced reports whether the initial list has been delivered.
func (i *Informer) HasSynced() bool { return i.informer.HasSynced() }

// EnsureIndex adds the named index unless the informer has one by that name already. Index
// functions are keyed by name across all controllers sharing the informer, so one name must
// always mean one function (package index owns the names).
func (i *Informer) EnsureIndex(name string, fn cache.IndexFunc) error {
	i.indexMu.Lock()
	defer i.indexMu.Unlock()
	if _, ok := i.informer.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	return i.informer.AddIndexers(cache.Indexers{name: fn})
}

// HasIndex reports whether the informer has the named index. Safe to call from event
// handlers while another goroutine adds an index (the indexer's own map of index functions
// is not: client-go hands it out unguarded).
func (i *Informer) HasIndex(name string) bool {
	i.indexMu.Lock()
	defer i.indexMu.Unlock()
	_, ok := i.informer.GetIndexer().GetIndexers()[name]
	return ok
}

// Attach returns what is attached to the informer under name, making it on first use with
// make, whose handler is then registered on the informer for as long as it runs: the one
// handler through which a package fans events out to its own subscribers (engine/reconcile's
// router), instead of one handler, goroutine and buffer per subscriber. Attach is safe for
// concurrent use; make runs at most once per name and informer.
func (i *Informer) Attach(name string, make func() (any, cache.ResourceEventHandler)) (any, error) {
	i.indexMu.Lock()
	defer i.indexMu.Unlock()
	if v, ok := i.attached[name]; ok {
		return v, nil
	}
	v, h := make()
	if _, err := i.informer.AddEventHandler(h); err != nil {
		return nil, err
	}
	if i.attached == nil {
		i.attached = map[string]any{}
	}
	i.attached[name] = v
	return v, nil
}

// AddEventHandler registers h; the returned registration is removed by RemoveEventHandler.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.informer.AddEventHandler(h)
}

// RemoveEventHandler removes a registration made by AddEventHandler.
func (i *Informer) RemoveEventHandler(r cache.ResourceEventHandlerRegistration) error {
	return i.informer.RemoveEventHandler(r)
}

// Factory makes and shares informers. It is safe for concurrent use.
type Factory struct {
	client dynamic.Interface
	resync time.Duration

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]*Informer
}

// NewFactory returns a Factory listing and watching through client.
func NewFactory(client dynamic.Interface) *Factory {
	return &Factory{client: client, informers: map[schema.GroupVersionResource]*Informer{}}
}

// Acquire returns the shared informer of gvr, starting it on first use. Each Acquire must be
// paired with one Release. The informer may not have synced yet: wait with cache.WaitForCacheSync.
func (f *Factory) Acquire(gvr schema.GroupVersionResource) *Informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[gvr]; ok {
		inf.refs++
		return inf
	}
	client := f.client.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, opts)
		},
	}
	si := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, f.resync, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	if err := si.SetTransform(dropManagedFields); err != nil {
		panic(fmt.Sprintf("informers: SetTransform before start failed: %v", err))
	}
	inf := &Informer{GVR: gvr, informer: si, stop: make(chan struct{}), refs: 1}
	f.informers[gvr] = inf
	go si.Run(inf.stop)
	return inf
}

// Release drops one reference to inf; the last one stops it.
func (f *Factory) Release(inf *Informer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf.refs--
	if inf.refs > 0 {
		return
	}
	close(inf.stop)
	delete(f.informers, inf.GVR)
}

// Active returns how many informers run now (for metrics and tests).
func (f *Factory) Active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.informers)
}

// Shutdown stops every informer.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for gvr, inf := range f.informers {
		close(inf.stop)
		delete(f.informers, gvr)
	}
}

func dropManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
	}
	return obj, nil
}
