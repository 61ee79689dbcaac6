package informers

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// shareLW lists and watches a resource for an informer that caches only what this replica
// needs: the objects its filter keeps. Filtering happens on the client, as objects arrive:
// the API cannot select by a hash ring (label selectors would need someone to label every
// object with its member, at one write per object and per move), nor by "carries one of
// these label keys".
//
// When what is kept changes (the ring or the informer's needs), resync makes the open watch
// list again, from a consistent read, and hand the reflector the difference as watch events:
// what is now kept and was not, or changed since, as added or modified; what is no longer
// kept, as deleted; then a bookmark at the list's resourceVersion, from which the watch
// resumes. The reflector never relists (which would wait out its backoff), and settled says
// when the informer's store holds everything a pass handed over.
//
// Every method is safe for concurrent use. Watch results are read by one reflector.
type shareLW struct {
	client dynamic.ResourceInterface
	filter *atomic.Pointer[filter]
	owns   func(key string) bool // nil: every parent
	store  func() cache.Indexer

	mu sync.Mutex
	// present maps the key of every object handed to the reflector, and not deleted since,
	// to its resourceVersion.
	present map[string]string
	// epoch counts resync requests; applied is the epoch the latest pass (list or resync)
	// filtered with; pending are the objects of that pass the store has not shown yet, and
	// removed the keys it deleted that the store may still hold.
	epoch, applied uint64
	pending        map[string]string
	removed        map[string]bool
	streams        map[*stream]bool
	// lists counts the lists handed over: a stream opened before the latest one is over,
	// and what its last events would do to present is not the reflector's any more.
	lists uint64
}

// IsWatchListSemanticsUnSupported makes the reflector list and then watch, instead of
// streaming the initial list in a watch: a resync must be able to cut into any watch.
func (lw *shareLW) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *shareLW) keep(u *unstructured.Unstructured) bool { return lw.filter.Load().keep(u, lw.owns) }

// ListWithContext lists the resource whole (the reflector replaces its store with what it
// gets) and drops what is not kept.
func (lw *shareLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	epoch := lw.epoch
	lw.mu.Unlock()
	list, err := lw.listKept(ctx, opts)
	if err != nil {
		return nil, err
	}
	present := make(map[string]string, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		present[objectKey(u.GetNamespace(), u.GetName())] = u.GetResourceVersion()
	}
	lw.mu.Lock()
	lw.lists++
	lw.present = present
	lw.pending = make(map[string]string, len(present))
	for k, v := range present {
		lw.pending[k] = v
	}
	lw.removed = nil // the reflector replaces its store with the list
	lw.applied = epoch
	lw.mu.Unlock()
	return list, nil
}

// listPage is how many objects a list asks for at once (a variable for tests).
var listPage int64 = 2000

// listKept lists the resource in pages, one consistent read, and keeps of each page what the
// filter keeps: objects no holder needs (a cluster's unrelated ConfigMaps) are decoded once
// and never all held at once. A continue token that expired restarts the list, once.
func (lw *shareLW) listKept(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	opts.Limit, opts.Continue = listPage, ""
	if opts.ResourceVersion == "0" {
		// "Any version" is served from the watch cache whole, ignoring the limit: the
		// latest is served in pages.
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	first := opts
	var out *unstructured.UnstructuredList
	restarted := false
	for {
		page, err := lw.client.List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" && !restarted {
			restarted, opts, out = true, first, nil
			opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
			continue
		}
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = &unstructured.UnstructuredList{Object: page.Object}
		}
		for i := range page.Items {
			if lw.keep(&page.Items[i]) {
				out.Items = append(out.Items, page.Items[i])
			}
		}
		if page.GetContinue() == "" {
			out.SetContinue("")
			out.SetRemainingItemCount(nil)
			return out, nil
		}
		opts.Continue = page.GetContinue()
		// A continued page is read at the first page's resourceVersion, which the token holds.
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
}

// List and Watch are ListWithContext and WatchWithContext without a context.
func (lw *shareLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *shareLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// WatchWithContext opens a watch whose events are filtered as they arrive.
func (lw *shareLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.client.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &stream{lw: lw, ctx: ctx, opts: opts, under: w, out: make(chan watch.Event),
		stop: make(chan struct{}), resync: make(chan struct{}, 1)}
	lw.mu.Lock()
	s.list = lw.lists
	if lw.streams == nil {
		lw.streams = map[*stream]bool{}
	}
	lw.streams[s] = true
	if lw.epoch > lw.applied {
		s.resync <- struct{}{} // the list before this watch filtered with an older epoch
	}
	lw.mu.Unlock()
	go s.run()
	return s, nil
}

// size returns how many objects the reflector was handed and not told are deleted: the
// objects its store holds, or is about to. Counting the store's keys would copy them all.
func (lw *shareLW) size() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return len(lw.present)
}

// resync asks for a pass with what is kept now, and returns its epoch for settled.
func (lw *shareLW) resync() uint64 {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.epoch++
	for s := range lw.streams {
		select {
		case s.resync <- struct{}{}:
		default:
		}
	}
	return lw.epoch
}

// settled reports whether a pass of epoch or later has been handed over and the store holds
// every object it handed over (at that resourceVersion or a later one, or deleted since) and
// none of those it handed over as deleted (unless kept again since).
func (lw *shareLW) settled(epoch uint64) bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.applied < epoch {
		return false
	}
	store := lw.store()
	for k, rv := range lw.pending {
		if _, ok := lw.present[k]; !ok {
			delete(lw.pending, k)
			continue
		}
		obj, exists, _ := store.GetByKey(k)
		if !exists {
			return false
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && !notOlder(u.GetResourceVersion(), rv) {
			return false
		}
		delete(lw.pending, k)
	}
	for k := range lw.removed {
		if _, back := lw.present[k]; !back {
			if _, exists, _ := store.GetByKey(k); exists {
				return false
			}
		}
		delete(lw.removed, k)
	}
	return true
}

// notOlder reports whether resourceVersion a is b or later: etcd revisions, compared as
// numbers; equal strings when either is not one.
func notOlder(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x >= y
}

// stream is one filtered watch.
type stream struct {
	lw     *shareLW
	ctx    context.Context
	opts   metav1.ListOptions
	under  watch.Interface
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
	resync chan struct{}
	list   uint64 // lw.lists when it opened
}

func (s *stream) ResultChan() <-chan watch.Event { return s.out }

func (s *stream) Stop() { s.once.Do(func() { close(s.stop) }) }

// run forwards the underlying watch's events through the filter until either side stops,
// cutting in a resync when one is asked for. Closing out makes the reflector watch again.
func (s *stream) run() {
	defer func() {
		s.under.Stop()
		s.lw.mu.Lock()
		delete(s.lw.streams, s)
		s.lw.mu.Unlock()
		close(s.out)
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-s.resync:
			if !s.pass() {
				return
			}
		case ev, ok := <-s.under.ResultChan():
			if !ok || !s.forward(ev) {
				return
			}
		}
	}
}

func (s *stream) send(ev watch.Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-s.stop:
		return false
	}
}

// forward hands ev over as the filter says: an object no longer kept leaves the store as
// deleted; events of objects never handed over are dropped.
func (s *stream) forward(ev watch.Event) bool {
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
		return s.send(ev) // bookmarks and errors
	}
	k := objectKey(u.GetNamespace(), u.GetName())
	s.lw.mu.Lock()
	if s.list != s.lw.lists { // the reflector listed since: this stream is over
		s.lw.mu.Unlock()
		return false
	}
	_, had := s.lw.present[k]
	switch {
	case ev.Type != watch.Deleted && s.lw.keep(u):
		s.lw.present[k] = u.GetResourceVersion()
	case had:
		delete(s.lw.present, k)
		ev.Type = watch.Deleted
	default:
		s.lw.mu.Unlock()
		return true
	}
	s.lw.mu.Unlock()
	return s.send(ev)
}

// pass lists the resource with a consistent read, hands over the difference from what the
// reflector holds, and resumes watching at the list's resourceVersion. A failure ends the
// stream; the reflector then watches again and the next stream passes at its start.
func (s *stream) pass() bool {
	s.lw.mu.Lock()
	epoch := s.lw.epoch
	s.lw.mu.Unlock()
	s.under.Stop()
	list, err := s.lw.listKept(s.ctx, metav1.ListOptions{LabelSelector: s.opts.LabelSelector, FieldSelector: s.opts.FieldSelector})
	if err != nil {
		return false
	}
	var events []watch.Event
	seen := make(map[string]bool, len(list.Items))
	pending, removed := map[string]string{}, map[string]bool{}
	s.lw.mu.Lock()
	if s.list != s.lw.lists {
		s.lw.mu.Unlock()
		return false
	}
	for i := range list.Items {
		u := &list.Items[i]
		if !s.lw.keep(u) {
			continue
		}
		k, rv := objectKey(u.GetNamespace(), u.GetName()), u.GetResourceVersion()
		seen[k] = true
		old, had := s.lw.present[k]
		if had && old == rv {
			continue
		}
		t := watch.Added
		if had {
			t = watch.Modified
		}
		s.lw.present[k] = rv
		pending[k] = rv
		events = append(events, watch.Event{Type: t, Object: u})
	}
	store := s.lw.store()
	for k := range s.lw.present {
		if seen[k] {
			continue
		}
		delete(s.lw.present, k)
		removed[k] = true
		var last runtime.Object
		if obj, exists, _ := store.GetByKey(k); exists {
			last = obj.(runtime.Object)
		} else { // handed over, not stored yet: its key is enough to delete it
			u := &unstructured.Unstructured{Object: map[string]any{}}
			if ns, name, err := cache.SplitMetaNamespaceKey(k); err == nil {
				u.SetNamespace(ns)
				u.SetName(name)
			}
			last = u
		}
		events = append(events, watch.Event{Type: watch.Deleted, Object: last})
	}
	s.lw.mu.Unlock()
	bookmark := &unstructured.Unstructured{Object: map[string]any{}}
	bookmark.SetResourceVersion(list.GetResourceVersion())
	events = append(events, watch.Event{Type: watch.Bookmark, Object: bookmark})
	for _, ev := range events {
		if !s.send(ev) {
			return false
		}
	}
	s.lw.mu.Lock()
	if epoch > s.lw.applied {
		s.lw.applied = epoch
		s.lw.pending, s.lw.removed = pending, removed
	} else {
		for k, v := range pending {
			s.lw.pending[k] = v
		}
		if s.lw.removed == nil {
			s.lw.removed = map[string]bool{}
		}
		for k := range removed {
			s.lw.removed[k] = true
		}
	}
	s.lw.mu.Unlock()
	opts := s.opts
	opts.ResourceVersion, opts.AllowWatchBookmarks, opts.SendInitialEvents, opts.ResourceVersionMatch = list.GetResourceVersion(), true, nil, ""
	w, err := s.lw.client.Watch(s.ctx, opts)
	if err != nil {
		return false
	}
	s.under = w
	return true
}
