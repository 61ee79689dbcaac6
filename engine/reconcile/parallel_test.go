package reconcile

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestInParallel: every call made once, never more than the limit at once.
func TestInParallel(t *testing.T) {
	for _, c := range []struct{ n, limit int }{{0, 4}, {1, 4}, {50, 1}, {50, 8}} {
		var now, most atomic.Int32
		calls := make([]atomic.Int32, c.n)
		inParallel(c.n, c.limit, func(i int) {
			n := now.Add(1)
			defer now.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(100 * time.Microsecond)
			calls[i].Add(1)
		})
		for i := range calls {
			if got := calls[i].Load(); got != 1 {
				t.Errorf("n=%d limit=%d: call %d made %d times", c.n, c.limit, i, got)
			}
		}
		if m := most.Load(); m > int32(c.limit) {
			t.Errorf("n=%d limit=%d: %d calls at once", c.n, c.limit, m)
		}
	}
}

// TestHelperPoolReuses: functions run one after the other reuse one goroutine, concurrent ones
// get one each (five blocked functions would never all end otherwise), and idle goroutines
// end.
func TestHelperPoolReuses(t *testing.T) {
	p := newHelperPool(200 * time.Millisecond)
	for range 20 {
		done := make(chan struct{})
		p.run(func() { close(done) })
		<-done
		waitUntil(t, func() bool { return p.live.Load() == 1 }) // idle again, not gone
	}
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 5 {
		wg.Add(1)
		p.run(func() { defer wg.Done(); <-release })
	}
	waitUntil(t, func() bool { return p.live.Load() == 5 })
	close(release)
	wg.Wait()
	waitUntil(t, func() bool { return p.live.Load() == 0 })
}

// deep uses about depth KiB of stack, as a write through the HTTP client does.
//
//go:noinline
func deep(depth int) byte {
	var buf [1024]byte
	buf[depth%1024] = byte(depth)
	if depth == 0 {
		return buf[0]
	}
	return deep(depth-1) + buf[depth%1024]
}

// BenchmarkInParallel: eight calls that each use 64 KiB of stack, on the pool's goroutines
// and on a new goroutine per call.
func BenchmarkInParallel(b *testing.B) {
	work := func(int) { deep(64) }
	b.Run("helpers", func(b *testing.B) {
		for b.Loop() {
			inParallel(8, 8, work)
		}
	})
	b.Run("goroutine-per-call", func(b *testing.B) {
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() { defer wg.Done(); work(i) }()
			}
			wg.Wait()
		}
	})
}
