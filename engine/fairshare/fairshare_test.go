package fairshare

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRoundRobin: with one slot held, a controller with many waiters and one with a single
// waiter are served in turn, not in arrival order.
func TestRoundRobin(t *testing.T) {
	b := New(1)
	ctx := context.Background()
	if err := b.Acquire(ctx, "hot"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []string
	var wg sync.WaitGroup
	wait := func(name string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Acquire(ctx, name); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			served = append(served, name)
			mu.Unlock()
		}()
		waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return waiters(b) > 0 && b.waiting[name] != nil })
	}
	for range 3 {
		wait("hot")
	}
	wait("calm")
	for i := range 4 {
		b.Release()
		waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(served) == i+1 })
	}
	wg.Wait()
	if want := []string{"hot", "calm", "hot", "hot"}; !slices.Equal(served, want) {
		t.Errorf("served %v, want %v", served, want)
	}
}

// TestGiveUp: a waiter whose context ends holds nothing and takes no slot from others.
func TestGiveUp(t *testing.T) {
	b := New(1)
	if err := b.Acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := b.Acquire(ctx, "b"); err == nil {
		t.Fatal("Acquire returned a slot the budget did not have")
	}
	b.Release()
	if err := b.Acquire(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.free != 0 || len(b.turn) != 0 || len(b.waiting) != 0 {
		t.Errorf("free %d, turn %v, waiting %v; want all empty", b.free, b.turn, b.waiting)
	}
}

func waiters(b *Budget) int {
	n := 0
	for _, q := range b.waiting {
		n += len(q)
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
	}
}
