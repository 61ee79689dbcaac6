package reconcile

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestServeQueue checks that serveQueue processes every item once, never more than its
// workers at once, that no goroutine of it outlives the work (none waits in Get), and that it
// returns once the queue shuts down.
func TestServeQueue(t *testing.T) {
	for _, workers := range []int{1, 3} {
		queue := workqueue.NewTyped[int]()
		var running sync.WaitGroup
		var now, most atomic.Int32
		var mu sync.Mutex
		seen := map[int]int{}
		process := func(item int) {
			defer queue.Done(item)
			n := now.Add(1)
			defer now.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(100 * time.Microsecond)
			mu.Lock()
			seen[item]++
			mu.Unlock()
		}
		served := make(chan struct{})
		go func() {
			serveQueue[int](queue, workers, &running, process)
			close(served)
		}()
		const items = 300
		for round := range 3 { // bursts with idle gaps, as resyncs come
			for i := range items / 3 {
				queue.Add(round*items/3 + i)
			}
			waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == (round+1)*items/3 })
			idle := make(chan struct{})
			go func() { running.Wait(); close(idle) }()
			select {
			case <-idle:
			case <-time.After(5 * time.Second):
				t.Fatalf("%d workers: a goroutine outlived the work", workers)
			}
		}
		for item, n := range seen {
			if n != 1 {
				t.Errorf("%d workers: item %d processed %d times", workers, item, n)
			}
		}
		if m := most.Load(); m > int32(workers) {
			t.Errorf("%d workers: %d items processed at once", workers, m)
		}
		queue.ShutDown()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d workers: serveQueue did not return after the queue shut down", workers)
		}
	}
}

func waitUntil(t *testing.T, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
