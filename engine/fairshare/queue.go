package fairshare

import (
	"math"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Queue is a work queue of items (the manager's controller and library keys) that its workers
// take in turn by flow: among the tenants with items queued, those with the fewest items in
// process first, tenants in turn (rotation), then a tenant's controllers in turn. So one
// tenant with many items queued, each long to process, delays another tenant's item by at
// most one item per worker: the next worker to be free takes it. With Workers set, a tenant
// holds at most its share of them, as Slots shares slots: max(1, min(workers / active,
// workers - 1)), active counting the tenants with items queued or in process; even alone a
// tenant leaves a worker free, which the next tenant to come takes at once. Otherwise it keeps
// client-go's work queue contract: an item queued again before a worker took it is queued
// once; an item added while a worker processes it is queued again once Done, so no item is
// processed by two workers at once; AddAfter and AddRateLimited delay an Add, by the rate
// limiter's backoff for the latter, until Forget. A Queue is safe for concurrent use.
type Queue[T comparable] struct {
	flowOf  func(T) Flow
	workers int // 0: no share
	limiter workqueue.TypedRateLimiter[T]
	metrics queueMetrics

	mu   sync.Mutex
	cond *sync.Cond
	// queued are the items waiting for a worker, in turn; dirty those to process (queued,
	// or added again while processing); processing those a worker holds, and busy how many
	// of them each tenant holds.
	queued     turns[T]
	dirty      map[T]time.Time // when it was added
	processing map[T]processing
	busy       map[string]int
	delayed    map[T]*delay
	down       bool
	stop       chan struct{}
}

type processing struct {
	tenant string
	since  time.Time
}

// delay is an item AddAfter holds until at.
type delay struct {
	timer *time.Timer
	at    time.Time
}

// QueueConfig configures a Queue.
type QueueConfig[T comparable] struct {
	// FlowOf is the flow an item is served as.
	FlowOf func(T) Flow
	// Workers, when more than one, is how many workers call Get: each tenant then holds at
	// most its share of them.
	Workers int
	// RateLimiter is AddRateLimited's backoff.
	RateLimiter workqueue.TypedRateLimiter[T]
	// Name and Metrics, when Metrics is set, publish the queue as client-go's work queue
	// metrics of that name.
	Name    string
	Metrics workqueue.MetricsProvider
}

// NewQueue returns an empty Queue. Call ShutDown when done.
func NewQueue[T comparable](cfg QueueConfig[T]) *Queue[T] {
	q := &Queue[T]{flowOf: cfg.FlowOf, workers: cfg.Workers, limiter: cfg.RateLimiter, dirty: map[T]time.Time{},
		processing: map[T]processing{}, busy: map[string]int{}, delayed: map[T]*delay{}, stop: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	if cfg.Metrics != nil {
		q.metrics = newQueueMetrics(cfg.Metrics, cfg.Name)
		go q.refresh()
	}
	return q
}

// Add queues item, unless it is queued already; an item in process is queued again once
// Done. Nothing is queued after ShutDown.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(item)
}

func (q *Queue[T]) addLocked(item T) {
	if q.down {
		return
	}
	if _, dirty := q.dirty[item]; dirty {
		return
	}
	q.dirty[item] = time.Now()
	q.metrics.added()
	if _, held := q.processing[item]; held {
		return
	}
	q.queued.push(q.flowOf(item), item)
	q.cond.Signal()
}

// AddAfter adds item once d has passed; an item already waiting is added at the earlier of
// the two times.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	if d <= 0 {
		q.Add(item)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return
	}
	at := time.Now().Add(d)
	if w := q.delayed[item]; w != nil {
		if w.at.After(at) && w.timer.Stop() {
			w.at = at
			w.timer.Reset(d)
		}
		return
	}
	w := &delay{at: at}
	w.timer = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.delayed[item] == w {
			delete(q.delayed, item)
			q.addLocked(item)
		}
	})
	q.delayed[item] = w
}

// AddRateLimited adds item after the rate limiter's backoff for it.
func (q *Queue[T]) AddRateLimited(item T) {
	q.metrics.retried()
	q.AddAfter(item, q.limiter.When(item))
}

// Forget ends item's backoff: its next AddRateLimited waits the least.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues is how many times item was added rate limited since its last Forget.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

// Get waits for an item to process and returns it, to be given back with Done; shutdown is
// true, with no item, once ShutDown was called (items still queued are dropped).
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.down {
		if item, ok := q.take(); ok {
			return item, false
		}
		q.cond.Wait()
	}
	return item, true
}

// take hands out the item next in turn, if a tenant within its share has one. q.mu is held.
func (q *Queue[T]) take() (item T, ok bool) {
	share := q.share()
	least := -1
	for _, t := range q.queued.tenants {
		if n := q.busy[t]; n < share && (least < 0 || n < least) {
			least = n
		}
	}
	if least < 0 {
		return item, false
	}
	f, item, _, _ := q.queued.next(func(tenant string) bool { return q.busy[tenant] == least })
	now := time.Now()
	q.metrics.taken(now.Sub(q.dirty[item]))
	delete(q.dirty, item)
	q.processing[item] = processing{tenant: f.Tenant, since: now}
	q.busy[f.Tenant]++
	return item, true
}

// share is how many items a tenant may have in process now. q.mu is held.
func (q *Queue[T]) share() int {
	if q.workers <= 1 {
		return math.MaxInt
	}
	active := len(q.busy)
	for _, t := range q.queued.tenants {
		if q.busy[t] == 0 {
			active++
		}
	}
	return max(1, min(q.workers/max(active, 1), q.workers-1))
}

// Done gives back an item Get returned; added again meanwhile, it is queued now.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p, held := q.processing[item]
	if !held {
		return
	}
	q.metrics.done(time.Since(p.since))
	delete(q.processing, item)
	if q.busy[p.tenant]--; q.busy[p.tenant] <= 0 {
		delete(q.busy, p.tenant)
	}
	if _, dirty := q.dirty[item]; dirty && !q.down {
		q.queued.push(q.flowOf(item), item)
	}
	q.cond.Broadcast() // a tenant at its share, or every tenant's share, may have room now
}

// Len is how many items wait for a worker.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, t := range q.queued.tenants {
		n += q.queued.waiters(t)
	}
	return n
}

// ShutDown makes every Get return shutdown, now and from now on, and drops what waits.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return
	}
	q.down = true
	for item, w := range q.delayed {
		w.timer.Stop()
		delete(q.delayed, item)
	}
	close(q.stop)
	q.cond.Broadcast()
}
