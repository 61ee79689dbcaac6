package reconcile

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// timerQueue is client-go's work queue with AddAfter served by one timer per waiting
// request, instead of client-go's delaying queue: a goroutine per queue, a buffer of a
// thousand waiters and a heartbeat that wakes it every 10 s while nothing waits. With a
// thousand idle controllers those were a fifth of the engine's heap and most of its idle
// CPU. A request waits once: added after d while it already waits for an earlier time, it
// keeps the earlier one, as client-go's does. Safe for concurrent use.
type timerQueue[T comparable] struct {
	workqueue.TypedInterface[T]
	retries workqueue.CounterMetric

	mu      sync.Mutex
	waiting map[T]*waiter
}

type waiter struct {
	at    time.Time
	timer *time.Timer
}

// newTimerQueue returns the queue named name, its metrics from provider.
func newTimerQueue[T comparable](name string, provider workqueue.MetricsProvider) *timerQueue[T] {
	return &timerQueue[T]{
		TypedInterface: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, MetricsProvider: provider, Clock: queueClock{}}),
		retries:        provider.NewRetriesMetric(name),
		waiting:        map[T]*waiter{},
	}
}

// AddAfter adds item once d has passed (at once when d is not positive), unless it waits for
// an earlier time already.
func (q *timerQueue[T]) AddAfter(item T, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	q.retries.Inc()
	if d <= 0 {
		q.Add(item)
		return
	}
	at := time.Now().Add(d)
	q.mu.Lock()
	defer q.mu.Unlock()
	if w, ok := q.waiting[item]; ok {
		if !at.Before(w.at) {
			return
		}
		w.timer.Stop()
	}
	w := &waiter{at: at}
	w.timer = time.AfterFunc(d, func() {
		q.mu.Lock()
		if q.waiting[item] == w {
			delete(q.waiting, item)
		}
		q.mu.Unlock()
		q.Add(item)
	})
	q.waiting[item] = w
}

// ShutDown stops the timers of the waiting requests, then the queue.
func (q *timerQueue[T]) ShutDown() {
	q.stopTimers()
	q.TypedInterface.ShutDown()
}

// ShutDownWithDrain stops the timers of the waiting requests, then the queue once the
// requests in process are done.
func (q *timerQueue[T]) ShutDownWithDrain() {
	q.stopTimers()
	q.TypedInterface.ShutDownWithDrain()
}

func (q *timerQueue[T]) stopTimers() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for item, w := range q.waiting {
		w.timer.Stop()
		delete(q.waiting, item)
	}
}
