package fairshare

import (
	"context"
	"sync"
)

// Holdings are what one reconcile holds until it ends, such as the room its webhooks'
// answers take in a Bytes: whoever takes something for the reconcile adds how to give it
// back, and the reconcile gives everything back at once when it ends. Safe for concurrent
// use.
type Holdings struct {
	mu      sync.Mutex
	release []func()
}

type holdingsKey struct{}

// WithHoldings is ctx carrying h.
func WithHoldings(ctx context.Context, h *Holdings) context.Context {
	return context.WithValue(ctx, holdingsKey{}, h)
}

// HoldingsOf is the Holdings ctx carries, nil for none.
func HoldingsOf(ctx context.Context) *Holdings {
	h, _ := ctx.Value(holdingsKey{}).(*Holdings)
	return h
}

// Add records how to give back one thing held.
func (h *Holdings) Add(release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release = append(h.release, release)
}

// Release gives back everything held, once.
func (h *Holdings) Release() {
	h.mu.Lock()
	release := h.release
	h.release = nil
	h.mu.Unlock()
	for _, f := range release {
		f()
	}
}
