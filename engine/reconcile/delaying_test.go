package reconcile

import (
	"testing"
	"time"

	"metascript.dev/metascript/engine/metrics"
)

// TestTimerQueueKeepsTheEarliestWait: a request added after a delay while it waits keeps
// the earlier of its two times and comes once; one waiting when the queue shuts down never
// comes.
func TestTimerQueueKeepsTheEarliestWait(t *testing.T) {
	q := newTimerQueue[string]("test/timer", metrics.New().WorkQueue())
	q.AddAfter("a", time.Hour)
	q.AddAfter("a", time.Millisecond) // earlier: replaces the hour
	q.AddAfter("b", time.Millisecond)
	q.AddAfter("b", time.Hour) // later: b keeps its millisecond
	got := map[string]bool{}
	for range 2 {
		item, _ := q.Get()
		got[item] = true
		q.Done(item)
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("got %v, want a and b once their earlier times passed", got)
	}
	q.mu.Lock()
	left := len(q.waiting)
	q.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d requests still wait after coming", left)
	}
	q.AddAfter("c", time.Hour)
	q.ShutDown()
	if _, shutdown := q.Get(); !shutdown {
		t.Fatal("Get after ShutDown did not report it")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) != 0 {
		t.Fatalf("%d timers left after ShutDown", len(q.waiting))
	}
}
