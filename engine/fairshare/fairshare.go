// Package fairshare shares a budget of concurrent reconciles among many controllers fairly:
// while the budget is spent, the controllers waiting for it are served in turn, one slot
// each, so that a controller with many slow, failing or hot parents cannot starve another.
// It is the engine's counterpart of the API server's fair queuing, with one queue per
// controller and round robin between them.
package fairshare

import (
	"context"
	"sync"
)

// Budget is a number of slots shared by many controllers. It is safe for concurrent use.
type Budget struct {
	mu   sync.Mutex
	free int
	// waiting holds each controller's waiters in arrival order; turn holds the controllers
	// with waiters, in the order they are served.
	waiting map[string][]chan struct{}
	turn    []string
}

// New returns a Budget of slots, at least 1.
func New(slots int) *Budget {
	return &Budget{free: max(slots, 1), waiting: map[string][]chan struct{}{}}
}

// Acquire returns once controller holds a slot, which it gives back with Release; or with
// ctx's error once ctx ends first, holding nothing.
func (b *Budget) Acquire(ctx context.Context, controller string) error {
	b.mu.Lock()
	if b.free > 0 && len(b.turn) == 0 {
		b.free--
		b.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	if len(b.waiting[controller]) == 0 {
		b.turn = append(b.turn, controller)
	}
	b.waiting[controller] = append(b.waiting[controller], ch)
	b.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if b.forget(controller, ch) {
		b.mu.Unlock()
		return ctx.Err()
	}
	b.mu.Unlock()
	b.Release() // the slot was handed over as ctx ended: pass it on
	return ctx.Err()
}

// Release gives a slot back: to the next controller in turn that waits, or to the budget.
func (b *Budget) Release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.turn) == 0 {
		b.free++
		return
	}
	controller := b.turn[0]
	b.turn = b.turn[1:]
	queue := b.waiting[controller]
	ch := queue[0]
	if len(queue) == 1 {
		delete(b.waiting, controller)
	} else {
		b.waiting[controller] = queue[1:]
		b.turn = append(b.turn, controller) // its next waiter comes after everyone else's
	}
	ch <- struct{}{}
}

// forget removes a waiter that gave up; false when it was already handed a slot. b.mu is
// held.
func (b *Budget) forget(controller string, ch chan struct{}) bool {
	queue := b.waiting[controller]
	for i, c := range queue {
		if c != ch {
			continue
		}
		queue = append(queue[:i:i], queue[i+1:]...)
		if len(queue) > 0 {
			b.waiting[controller] = queue
			return true
		}
		delete(b.waiting, controller)
		for j, name := range b.turn {
			if name == controller {
				b.turn = append(b.turn[:j:j], b.turn[j+1:]...)
				break
			}
		}
		return true
	}
	return false
}
