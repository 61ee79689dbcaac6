package fairshare

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRotationServesTenantsThenControllers: waiters are served tenant by tenant, and within
// a tenant controller by controller, whatever order they came in.
func TestRotationServesTenantsThenControllers(t *testing.T) {
	var r rotation
	chans := map[chan struct{}]string{}
	push := func(tenant, controller, label string) {
		ch := make(chan struct{})
		chans[ch] = label
		r.push(Flow{tenant, controller}, ch)
	}
	push("a", "a1", "a1-1")
	push("a", "a1", "a1-2")
	push("a", "a2", "a2-1")
	push("a", "a3", "a3-1")
	push("b", "b1", "b1-1")
	push("b", "b1", "b1-2")
	var served []string
	for {
		_, ch, ok, _ := r.next(func(string) bool { return true })
		if !ok {
			break
		}
		served = append(served, chans[ch])
	}
	want := []string{"a1-1", "b1-1", "a2-1", "b1-2", "a3-1", "a1-2"}
	if !slices.Equal(served, want) {
		t.Errorf("served %v, want %v", served, want)
	}
	if !r.empty() || len(r.queues) != 0 {
		t.Errorf("rotation not empty: %+v", r)
	}
}

// TestRotationPassesOverRefusedTenants: a tenant that may not be served keeps its place,
// and next says one was passed over.
func TestRotationPassesOverRefusedTenants(t *testing.T) {
	var r rotation
	a, b := make(chan struct{}), make(chan struct{})
	r.push(Flow{"a", "a"}, a)
	r.push(Flow{"b", "b"}, b)
	_, ch, ok, blocked := r.next(func(tenant string) bool { return tenant != "a" })
	if !ok || ch != b || !blocked {
		t.Fatalf("next = %v, %v, blocked %v; want b's waiter, a passed over", ch == b, ok, blocked)
	}
	if !r.waiting("a") || r.waiters("a") != 1 {
		t.Fatal("a lost its waiter")
	}
	if !r.remove(Flow{"a", "a"}, a) || r.remove(Flow{"a", "a"}, a) || !r.empty() {
		t.Fatal("remove: want true once, then false, and an empty rotation")
	}
}

// TestSlotsShareByTenant: a tenant's controllers share its share: however many controllers
// a tenant runs, a neighbour tenant gets as many slots as it.
func TestSlotsShareByTenant(t *testing.T) {
	s, _ := newTestSlots(4, time.Second)
	ctx := context.Background()
	for _, c := range []string{"a1", "a2", "a3"} {
		if err := s.Acquire(ctx, Flow{"a", c}); err != nil {
			t.Fatal(err)
		}
	}
	if n := held(s, "a"); n != 3 {
		t.Fatalf("tenant a holds %d, want 3 (all but one)", n)
	}
	// A fourth controller of a waits: a is at its share.
	a4 := make(chan struct{})
	go func() {
		if err := s.Acquire(ctx, Flow{"a", "a4"}); err != nil {
			t.Error(err)
		}
		close(a4)
	}()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.queue.waiting("a") })
	if err := s.Acquire(ctx, fl("b")); err != nil { // the slot left free
		t.Fatal(err)
	}
	s.Release(Flow{"a", "a1"})
	s.Release(Flow{"a", "a2"}) // a holds 1 now, under its share of 2 beside b
	<-a4
	if n := held(s, "a"); n != 2 {
		t.Fatalf("tenant a holds %d beside b, want its share of 2", n)
	}
	if err := s.Acquire(ctx, fl("b")); err != nil { // b's share is 2 as well
		t.Fatal(err)
	}
}

// TestSlotsRoundRobinAcrossTenants: with the slot held, a tenant with many waiters and one
// with a single waiter are served in turn, not in arrival order.
func TestSlotsRoundRobinAcrossTenants(t *testing.T) {
	s, _ := newTestSlots(1, time.Hour)
	ctx := context.Background()
	if err := s.Acquire(ctx, fl("x")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []Flow
	var wg sync.WaitGroup
	wait := func(f Flow) {
		s.mu.Lock()
		n := s.queue.waiters(f.Tenant)
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Acquire(ctx, f); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			served = append(served, f)
			mu.Unlock()
		}()
		waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.queue.waiters(f.Tenant) == n+1 })
	}
	for _, c := range []string{"h1", "h2", "h3"} {
		wait(Flow{"hot", c})
	}
	wait(Flow{"calm", "c1"})
	holder := fl("x")
	for i := range 4 {
		s.Release(holder)
		waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(served) == i+1 })
		mu.Lock()
		holder = served[i]
		mu.Unlock()
	}
	wg.Wait()
	var got []string
	for _, f := range served {
		got = append(got, f.Controller)
	}
	if want := []string{"h1", "c1", "h2", "h3"}; !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
	}
}
