package reconcile

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// workQueue is what serveQueue needs of a work queue.
type workQueue[T comparable] interface {
	Get() (item T, shutdown bool)
	Len() int
}

var _ workQueue[Request] = workqueue.TypedRateLimitingInterface[Request](nil)

// serveQueue takes items off queue until it shuts down and processes each on a goroutine
// of its own, at most workers at once; running counts those goroutines. An idle controller
// so holds one goroutine, blocked in Get, instead of workers of them whose stacks past
// reconciles grew (hook calls run deep): with a thousand controllers, that is most of the
// engine's memory. A slot is taken before Get, so no item waits off the queue for one.
//
// A goroutine that finds more items queued when it is done goes on with the next one, on
// the stack its reconciles grew, rather than handing its slot back for a new goroutine to
// grow a stack again: a resync reconciles every parent in a row. It takes one only when no
// one else is in Get (taking), so that it never waits in Get itself: it ends instead.
func serveQueue[T comparable](queue workQueue[T], workers int, running *sync.WaitGroup, process func(T)) {
	slots := make(chan struct{}, workers)
	var taking sync.Mutex // held while taking an item off the queue, and while blocked in Get
	next := func() (item T, ok bool) {
		if !taking.TryLock() {
			return item, false
		}
		defer taking.Unlock()
		if queue.Len() == 0 {
			return item, false
		}
		item, quit := queue.Get() // the one taker, and there is one to take
		return item, !quit
	}
	for {
		slots <- struct{}{}
		taking.Lock()
		item, quit := queue.Get()
		taking.Unlock()
		if quit {
			return
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			for ok := true; ok; item, ok = next() {
				process(item)
			}
		}()
	}
}
