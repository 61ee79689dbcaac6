package fairshare

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

var _ flowcontrol.RateLimiter = (*Rate)(nil)

// TestRateServesFlowsInTurn: once the burst is spent, a tenant with many requests waiting
// and one with a single request are served in turn.
func TestRateServesFlowsInTurn(t *testing.T) {
	r := NewRate(0.001, 1) // no token comes while the waiters queue
	ctx := context.Background()
	if err := r.Wait(ctx); err != nil { // the burst
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []string
	var wg sync.WaitGroup
	start := func(f Flow) {
		r.mu.Lock()
		n := r.queue.waiters(f.Tenant)
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Wait(WithFlow(ctx, f)); err != nil {
				t.Error(err)
			}
		}()
		waitFor(t, func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.queue.waiters(f.Tenant) == n+1
		})
	}
	r.mu.Lock()
	r.serving = true // hold the server back until every waiter is queued
	r.granted = func(f Flow) { mu.Lock(); defer mu.Unlock(); served = append(served, f.Controller) }
	r.mu.Unlock()
	for _, c := range []string{"a1", "a2", "a3", "a4"} {
		start(Flow{"a", c})
	}
	start(Flow{"b", "b1"})
	r.bucket.SetLimit(1000)
	go r.serve()
	wg.Wait()
	if want := []string{"a1", "b1", "a2", "a3", "a4"}; !slices.Equal(served, want) {
		t.Errorf("served %v, want %v", served, want)
	}
}

// TestRateGiveUp: a request whose context ends while it waits returns its error and leaves
// no waiter behind.
func TestRateGiveUp(t *testing.T) {
	r := NewRate(0.001, 1)
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := r.Wait(ctx); err == nil {
		t.Fatal("Wait returned a token the bucket did not have")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.queue.empty() {
		t.Errorf("waiters left: %+v", r.queue)
	}
}

// TestFlowOf: a context without a flow counts as the engine's.
func TestFlowOf(t *testing.T) {
	if f := FlowOf(context.Background()); f != EngineFlow {
		t.Errorf("FlowOf(no flow) = %v, want %v", f, EngineFlow)
	}
	f := Flow{"namespace/team-a", "namespacedcompositecontroller/team-a/x"}
	if got := FlowOf(WithFlow(context.Background(), f)); got != f {
		t.Errorf("FlowOf = %v, want %v", got, f)
	}
}
