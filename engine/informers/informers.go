// Package informers shares one dynamic informer per Scope among all controllers of the
// engine, reference-counted: the first Acquire starts it, the last Release stops it. A scope
// is a GroupVersionResource in every namespace, for the engine itself and cluster-scoped
// controllers, or in one namespace, for the controllers confined to it (the namespaced
// kinds): such an informer lists and watches that namespace alone, so that the engine
// receives for those controllers, let alone caches, nothing of another namespace. Cached
// objects have metadata.managedFields dropped to save memory; nothing in the engine reads
// them from the cache.
//
// Each holder says what it needs of a resource (Need) and an informer caches only that
// (share.go): the orphans its parents may adopt, and, when the engine shares its parents with
// other replicas (Factory.ShareBy), only the parents this replica owns and their children.
package informers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// Scope is what one informer lists and watches: a resource in every namespace (Namespace
// empty), or in one namespace only. A scope with a namespace must name a namespaced resource.
type Scope struct {
	GVR       schema.GroupVersionResource
	Namespace string
}

// Informer is one shared informer. Its Indexer holds *unstructured.Unstructured objects that
// callers must treat as read-only.
type Informer struct {
	Scope
	informer cache.SharedIndexInformer
	stop     chan struct{}
	refs     int
	indexMu  sync.Mutex
	attached map[string]any // under indexMu

	// What the holders need (under the Factory's lock), the filter made of it, the
	// filtering ListWatch, and the epoch of the last change of needs, which HasSynced waits
	// for.
	needs  needSet
	filter atomic.Pointer[filter]
	// holds counts the references taken by Hold; while there are some, pinned keeps the
	// needs of released holders. started: the informer runs (once some holder needs
	// something of it). Under the Factory's lock.
	holds   int
	pinned  needSet
	started bool
	share   *shareLW
	widened atomic.Uint64
}

// Indexer is the informer's indexed store.
func (i *Informer) Indexer() cache.Indexer { return i.informer.GetIndexer() }

// HasSynced reports whether the initial list has been delivered and whether the store holds
// what the holders' needs, as of the latest change of them, keep.
func (i *Informer) HasSynced() bool {
	return i.informer.HasSynced() && i.share.settled(i.widened.Load())
}

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
	owns   func(key string) bool // set by ShareBy; nil: this replica owns every parent

	mu        sync.Mutex
	informers map[Scope]*Informer
}

// NewFactory returns a Factory listing and watching through client.
func NewFactory(client dynamic.Interface) *Factory {
	return &Factory{client: client, informers: map[Scope]*Informer{}}
}

// ShareBy makes the factory's informers cache only what the parents owns says this replica
// owns need (see Need), for an engine sharing its parents with other replicas. owns is
// called with shard.Key names, concurrently, on every event; after it changes its answers,
// Reshard makes the informers catch up. ShareBy must be called before the first Acquire.
func (f *Factory) ShareBy(owns func(key string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owns = owns
}

// Reshard makes every informer that caches a share list again with what ShareBy's function
// answers now, and returns settled, which reports whether each of them has handed the
// difference to its store. Informers started later filter with the new answers from the
// start.
func (f *Factory) Reshard() (settled func() bool) {
	f.mu.Lock()
	type pass struct {
		lw    *shareLW
		epoch uint64
	}
	var passes []pass
	for _, inf := range f.informers {
		if inf.share != nil && inf.filter.Load() != nil {
			passes = append(passes, pass{inf.share, inf.share.resync()})
		}
	}
	f.mu.Unlock()
	return func() bool {
		for _, p := range passes {
			if !p.lw.settled(p.epoch) {
				return false
			}
		}
		return true
	}
}

// Acquire returns the shared informer of gvr in every namespace for a holder that needs every
// object. Each Acquire must be paired with one Release.
func (f *Factory) Acquire(gvr schema.GroupVersionResource) *Informer {
	return f.AcquireFor(Scope{GVR: gvr}, Need{})
}

// Release drops a reference taken by Acquire.
func (f *Factory) Release(inf *Informer) { f.ReleaseFor(inf, Need{}) }

// AcquireFor returns the shared informer of scope s, starting it on first use, for a holder
// that needs what need says of the objects in s. Each AcquireFor must be paired with one
// ReleaseFor of the same need. The informer may not have synced yet, or may be catching up
// with a need wider than its other holders': wait for HasSynced (WaitSynced).
//
// The informers of one resource in every namespace and in one namespace are distinct: a
// holder of the namespace's never widens what the cluster-wide one caches, and the objects
// both need are held by each.
func (f *Factory) AcquireFor(s Scope, need Need) *Informer {
	return f.acquire(s, &need)
}

// Hold keeps the informer of scope s running, without needing any of its objects, until
// Unhold: across the replacement of its holders, so that the new ones do not list it again.
// While it is held, what a released holder needed stays cached (a replacement that needs the
// same makes no pass), and the informer does not start listing before some holder needs
// something of it.
func (f *Factory) Hold(s Scope) *Informer { return f.acquire(s, nil) }

// Unhold drops a reference taken by Hold.
func (f *Factory) Unhold(inf *Informer) { f.release(inf, nil) }

// acquire takes a reference on the informer of s for need (nil: a hold).
func (f *Factory) acquire(s Scope, need *Need) *Informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf, ok := f.informers[s]
	if !ok {
		inf = f.newInformer(s)
	}
	inf.refs++
	if need == nil {
		inf.holds++
		return inf
	}
	inf.needs.add(*need)
	f.refilter(inf)
	if !inf.started {
		inf.started = true
		go inf.informer.Run(inf.stop)
	}
	return inf
}

// newInformer makes the informer of s, not started. f.mu is held.
func (f *Factory) newInformer(s Scope) *Informer {
	inf := &Informer{Scope: s, stop: make(chan struct{}), needs: needSet{}, pinned: needSet{}}
	inf.filter.Store(inf.needs.filter(nil))
	var client dynamic.ResourceInterface = f.client.Resource(s.GVR)
	if s.Namespace != "" {
		client = f.client.Resource(s.GVR).Namespace(s.Namespace)
	}
	inf.share = &shareLW{client: client, filter: &inf.filter, owns: f.owns, store: inf.Indexer}
	si := cache.NewSharedIndexInformer(inf.share, &unstructured.Unstructured{}, f.resync, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	if err := si.SetTransform(dropManagedFields); err != nil {
		panic(fmt.Sprintf("informers: SetTransform before start failed: %v", err))
	}
	inf.informer = si
	f.informers[s] = inf
	return inf
}

// ReleaseFor drops one reference to inf taken by AcquireFor with need; the last one stops it.
func (f *Factory) ReleaseFor(inf *Informer, need Need) { f.release(inf, &need) }

func (f *Factory) release(inf *Informer, need *Need) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf.refs--
	if need != nil {
		inf.needs.remove(*need)
		if inf.holds > 0 {
			inf.pinned.add(*need)
		}
	} else if inf.holds--; inf.holds == 0 {
		inf.pinned = needSet{}
	}
	if inf.refs > 0 {
		f.refilter(inf)
		return
	}
	close(inf.stop)
	delete(f.informers, inf.Scope)
}

// Widen replaces the need of one holder of inf, acquired with from, by to, which must read
// at least what from read (its Orphans covering from's, say). Until the informer has handed
// its store what it now keeps, HasSynced is false. The holder releases with to.
func (f *Factory) Widen(inf *Informer, from, to Need) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf.needs.remove(from)
	inf.needs.add(to)
	f.refilter(inf)
}

// refilter makes an informer keep what its holders need now, and what released holders
// needed while it is held, catching up with a resync pass when that changed. f.mu is held.
func (f *Factory) refilter(inf *Informer) {
	next := inf.needs.filter(inf.pinned)
	if next.equal(inf.filter.Load()) {
		return
	}
	inf.filter.Store(next)
	inf.widened.Store(inf.share.resync())
}

// Active returns how many informers run now (for metrics and tests).
func (f *Factory) Active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.informers)
}

// Sizes returns how many objects each running informer caches, by scope: the objects handed
// to its store and not deleted since, which the store holds or is about to. It copies no key.
func (f *Factory) Sizes() map[Scope]int {
	infs := f.running()
	sizes := make(map[Scope]int, len(infs))
	for _, inf := range infs {
		sizes[inf.Scope] = inf.share.size()
	}
	return sizes
}

// Keys returns the keys (namespace/name, or name) of the objects each running informer of gvr
// caches, by scope. It copies every key: for tests and diagnostics, never an event path.
func (f *Factory) Keys(gvr schema.GroupVersionResource) map[Scope][]string {
	out := map[Scope][]string{}
	for _, inf := range f.running() {
		if inf.GVR == gvr {
			out[inf.Scope] = inf.Indexer().ListKeys()
		}
	}
	return out
}

// running returns the informers that run now.
func (f *Factory) running() []*Informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	infs := make([]*Informer, 0, len(f.informers))
	for _, inf := range f.informers {
		infs = append(infs, inf)
	}
	return infs
}

// Shutdown stops every informer.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, inf := range f.informers {
		close(inf.stop)
		delete(f.informers, s)
	}
}

// WaitSynced waits until every fn reports synced or ctx ends, and reports whether they
// synced. It polls every 10 ms: cache.WaitForCacheSync polls every 100 ms, a delay an
// engine's start would pay several times in a row (controller resources, libraries, each
// controller's parents, then its children).
func WaitSynced(ctx context.Context, fns ...cache.InformerSynced) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		done := true
		for _, fn := range fns {
			if !fn() {
				done = false
				break
			}
		}
		if done {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// dropManagedFields is the informers' transform. It writes only to an object that holds
// managedFields: the transform also sees objects already in the store (shareLW hands the
// reflector a stored object as deleted when the filter stops keeping it), which handlers
// may be reading, and a delete from a map is a write even when the key is absent.
func dropManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			if _, held := md["managedFields"]; held {
				delete(md, "managedFields")
			}
		}
	}
	return obj, nil
}
