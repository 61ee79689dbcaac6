package fairshare

import (
	"context"
	"sync"
	"time"
)

// Cores are the slots of the inline (Starlark and JavaScript) hook calls of every tenant: the
// engine's cores. A call holds one while it runs, and nothing can make it give the core back
// before it ends (a JavaScript interpreter cannot be paused, only stopped), so a tenant whose
// calls burn their whole budget would keep what it holds for seconds. Cores therefore keep
// two lanes:
//
//   - A call starts on one of n light slots, which tenants share as Slots shares them.
//   - A call still running after the quantum turns heavy: it moves to the heavy lane at
//     once, overbooking it if it must, so that its light slot is free for others; and its
//     tenant is heavy from then until heavyFor after its last heavy call ended.
//   - A heavy tenant's calls start in the heavy lane: max(1, n-1) slots, which heavy tenants
//     share as Slots shares them.
//
// However many tenants burn, they run at most n-1 calls at once (besides, for as long as
// those take, calls that turned heavy while light), and short calls always find a light slot
// within the quantum. Cores is safe for concurrent use.
type Cores struct {
	quantum, heavyFor time.Duration
	light, heavy      *Slots

	mu  sync.Mutex
	now func() time.Time
	// heavyUntil is when each heavy tenant stops being heavy, unless heavyRunning says it
	// runs a heavy call still.
	heavyUntil   map[string]time.Time
	heavyRunning map[string]int
}

// NewCores returns the slots of n cores (at least 1); linger is Slots', quantum how long a call
// runs before it turns heavy, heavyFor how long its tenant stays heavy after.
func NewCores(n int, linger, quantum, heavyFor time.Duration) *Cores {
	n = max(n, 1)
	return &Cores{quantum: quantum, heavyFor: heavyFor, now: time.Now,
		light: NewSlots(n, linger), heavy: NewSlots(max(1, n-1), linger),
		heavyUntil: map[string]time.Time{}, heavyRunning: map[string]int{}}
}

// Call is one call's hold on a core, given back by Release.
type Call struct {
	c     *Cores
	flow  Flow
	timer *time.Timer
	// heavy and done are guarded by c.mu.
	heavy, done bool
}

// Acquire returns once f holds a core for one call: a light slot, or a heavy one when f's
// tenant is heavy; or with ctx's error once ctx ends first, holding nothing.
func (c *Cores) Acquire(ctx context.Context, f Flow) (*Call, error) {
	if c.isHeavy(f.Tenant) {
		if err := c.heavy.Acquire(ctx, f); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.heavyRunning[f.Tenant]++
		c.mu.Unlock()
		return &Call{c: c, flow: f, heavy: true}, nil
	}
	if err := c.light.Acquire(ctx, f); err != nil {
		return nil, err
	}
	call := &Call{c: c, flow: f}
	call.timer = time.AfterFunc(c.quantum, call.turnHeavy)
	return call, nil
}

// Heavy reports whether tenant's calls start in the heavy lane now.
func (c *Cores) Heavy(tenant string) bool { return c.isHeavy(tenant) }

func (c *Cores) isHeavy(tenant string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heavyRunning[tenant] > 0 {
		return true
	}
	until, ok := c.heavyUntil[tenant]
	if ok && !c.now().Before(until) {
		delete(c.heavyUntil, tenant)
		return false
	}
	return ok
}

// turnHeavy moves a call that ran for the quantum to the heavy lane. It runs on the timer's
// goroutine.
func (call *Call) turnHeavy() {
	c := call.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if call.done || call.heavy {
		return
	}
	call.heavy = true
	c.heavyRunning[call.flow.Tenant]++
	c.heavy.Take(call.flow)
	c.light.Release(call.flow)
}

// Release gives the core back. It is called once, when the call has returned.
func (call *Call) Release() {
	c := call.c
	if call.timer != nil {
		call.timer.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	call.done = true
	if !call.heavy {
		c.light.Release(call.flow)
		return
	}
	t := call.flow.Tenant
	if c.heavyRunning[t]--; c.heavyRunning[t] <= 0 {
		delete(c.heavyRunning, t)
	}
	c.heavyUntil[t] = c.now().Add(c.heavyFor)
	c.heavy.Release(call.flow)
}

// Heavy reports whether the call turned heavy (or started so).
func (call *Call) Heavy() bool {
	call.c.mu.Lock()
	defer call.c.mu.Unlock()
	return call.heavy
}
