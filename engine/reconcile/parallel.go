package reconcile

import (
	"sync"
	"sync/atomic"
	"time"
)

// inParallel calls do(i) for every i in [0, n), at most limit at once, and returns once every
// call has. The one bounded pool of a reconcile: its hook calls and its child writes. The
// calls run on the engine's helpers (helpers.run): a write goes deep into the HTTP client,
// and a new goroutine per call would grow its stack again each time.
func inParallel(n, limit int, do func(i int)) {
	switch n {
	case 0:
		return
	case 1:
		do(0)
		return
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		helpers.run(func() {
			defer wg.Done()
			defer func() { <-sem }()
			do(i)
		})
	}
	wg.Wait()
}

// helpers are the goroutines that run inParallel's calls, shared by every reconcile of the
// engine.
var helpers = newHelperPool(10 * time.Second)

// helperPool runs functions on goroutines that outlive them: a goroutine done with one waits
// up to idle for the next, on the stack it grew, then ends. There is no bound: each function
// runs at once, on an idle goroutine if one is waiting, else on a new one, so callers bound
// their own concurrency (inParallel's limit). Safe for concurrent use.
type helperPool struct {
	idle  time.Duration
	tasks chan func() // unbuffered: a send succeeds only when an idle goroutine takes it
	// live counts the goroutines serving, busy or idle; waiting those idle.
	live, waiting atomic.Int32
}

// newHelperPool returns a pool whose goroutines end after waiting idle for a function.
func newHelperPool(idle time.Duration) *helperPool {
	return &helperPool{idle: idle, tasks: make(chan func())}
}

// run calls f on a helper goroutine and returns without waiting for it.
func (p *helperPool) run(f func()) {
	select {
	case p.tasks <- f:
	default:
		go p.serve(f)
	}
}

// serve runs f, then the functions handed to it while it waits, until it has waited idle.
func (p *helperPool) serve(f func()) {
	p.live.Add(1)
	defer p.live.Add(-1)
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		f()
		t.Reset(p.idle)
		p.waiting.Add(1)
		select {
		case f = <-p.tasks:
			p.waiting.Add(-1)
		case <-t.C:
			p.waiting.Add(-1)
			return
		}
	}
}
