package fairshare

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBytesShareByTenant: a tenant alone may take everything; beside another it is held to
// half once it holds something, and the other gets the room it asks for as soon as it is free.
func TestBytesShareByTenant(t *testing.T) {
	b := NewBytes(100)
	ctx := context.Background()
	for range 4 {
		if err := b.Acquire(ctx, Flow{"a", "a1"}, 20); err != nil {
			t.Fatal(err)
		}
	}
	// b asks for 30 while 20 are free: it waits, and a's next waits behind its share.
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, fl("b"), 30) }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.queue.waiting("b") })
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.Acquire(short, Flow{"a", "a2"}, 10); err == nil {
		t.Fatal("a took more beside a waiting neighbour while over its share")
	}
	b.Release(Flow{"a", "a1"}, 20) // 40 free: b's 30 fits
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if all, by := b.Held("b"); by != 30 || all != 90 {
		t.Fatalf("held %d, b %d; want 90 and 30", all, by)
	}
}

// TestBytesTooLarge: a reservation larger than the total is refused at once.
func TestBytesTooLarge(t *testing.T) {
	b := NewBytes(100)
	var tl *TooLargeError
	if err := b.Acquire(context.Background(), fl("a"), 101); !errors.As(err, &tl) {
		t.Fatalf("Acquire(101 of 100) = %v, want a *TooLargeError", err)
	}
}

// TestBytesGiveUp: a waiter whose context ends holds nothing, and one behind it that fits is
// served.
func TestBytesGiveUp(t *testing.T) {
	b := NewBytes(100)
	ctx := context.Background()
	if err := b.Acquire(ctx, fl("a"), 60); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := b.Acquire(short, fl("b"), 50); err == nil {
		t.Fatal("got 50 of 40 free")
	}
	if err := b.Acquire(ctx, fl("c"), 40); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.queue.empty() || len(b.asking) != 0 || b.free != 0 {
		t.Errorf("free %d, queue %+v, asking %v; want 0 and nothing waiting", b.free, b.queue, b.asking)
	}
}
