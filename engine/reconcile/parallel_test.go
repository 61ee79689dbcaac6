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

// TestHelperPoolReuses: a function handed over while a goroutine waits runs on it, not on a
// new one; functions blocked at once get one goroutine each (five blocked functions would
// never all end otherwise); idle goroutines end.
func TestHelperPoolReuses(t *testing.T) {
	p := newHelperPool(time.Hour) // none ends while the test runs: live counts every start
	const runs = 20
	for i := range runs {
		if i > 0 {
			// A goroutine is about to wait; the handover may still just miss it, now and then.
			waitUntil(t, func() bool { return p.waiting.Load() >= 1 })
		}
		done := make(chan struct{})
		p.run(func() { close(done) })
		<-done
	}
	if n := p.live.Load(); n > runs/4 {
		t.Fatalf("%d goroutines started for %d functions run one after the other", n, runs)
	}

	p = newHelperPool(100 * time.Millisecond)
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
