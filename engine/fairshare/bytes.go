package fairshare

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Bytes is an amount of memory the engine's tenants share, such as the room for the answers
// of webhooks that reconciles in flight hold. A tenant holds at most its share,
// max(total / active, one reservation), where active counts the tenants holding or waiting;
// waiters are served in turn (rotation), each once the room it asks for is free and within
// its tenant's share. Bytes is safe for concurrent use.
type Bytes struct {
	mu     sync.Mutex
	total  int64
	free   int64
	held   map[string]int64 // by tenant
	queue  rotation
	asking map[chan struct{}]int64 // what each waiter asks for
}

// NewBytes returns total bytes to share (at least 1).
func NewBytes(total int64) *Bytes {
	total = max(total, 1)
	return &Bytes{total: total, free: total, held: map[string]int64{}, asking: map[chan struct{}]int64{}}
}

// TooLargeError is a reservation larger than everything there is to share.
type TooLargeError struct{ Asked, Total int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s asked for, more than the %s the engine holds for all tenants together",
		resource.NewQuantity(e.Asked, resource.BinarySI), resource.NewQuantity(e.Total, resource.BinarySI))
}

// Acquire returns once f holds n more bytes, which it gives back with Release; with ctx's
// error once ctx ends first, holding nothing; or at once with a *TooLargeError when n is more
// than the total.
func (b *Bytes) Acquire(ctx context.Context, f Flow, n int64) error {
	if n > b.total {
		return &TooLargeError{Asked: n, Total: b.total}
	}
	b.mu.Lock()
	if !b.queue.waiting(f.Tenant) && b.fits(f.Tenant, n) {
		b.held[f.Tenant] += n
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	b.queue.push(f, ch)
	b.asking[ch] = n
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if b.queue.remove(f, ch) {
		delete(b.asking, ch)
		b.dispatch() // waiters behind it may fit now
		b.mu.Unlock()
		return ctx.Err()
	}
	b.mu.Unlock()
	b.Release(f, n) // handed over as ctx ended: pass it on
	return ctx.Err()
}

// Release gives back n bytes f holds.
func (b *Bytes) Release(f Flow, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	if b.held[f.Tenant] -= n; b.held[f.Tenant] <= 0 {
		delete(b.held, f.Tenant)
	}
	b.dispatch()
}

// Held is how many bytes are held, and how many of them by tenant.
func (b *Bytes) Held(tenant string) (all, by int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - b.free, b.held[tenant]
}

// fits reports whether tenant may take n bytes now. b.mu is held.
func (b *Bytes) fits(tenant string, n int64) bool {
	if n > b.free {
		return false
	}
	held := b.held[tenant]
	if held == 0 {
		return true // one reservation, whatever its size
	}
	active := int64(len(b.held))
	for _, t := range b.queue.tenants {
		if b.held[t] == 0 {
			active++
		}
	}
	return held+n <= b.total/max(active, 1)
}

// dispatch serves the waiters that fit, in turn. b.mu is held.
func (b *Bytes) dispatch() {
	for {
		f, ch, ok, _ := b.queue.next(func(tenant string) bool {
			return b.fits(tenant, b.asking[b.queue.head(tenant)])
		})
		if !ok {
			return
		}
		n := b.asking[ch]
		delete(b.asking, ch)
		b.held[f.Tenant] += n
		b.free -= n
		ch <- struct{}{}
	}
}
