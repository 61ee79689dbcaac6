package fairshare

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
)

// Rate is one rate of requests to the API server shared by every client the engine makes,
// its own and those impersonating controllers' accounts, so that the engine's QPS means what
// it says however many accounts it serves. While requests wait for it, they are served in
// turn by flow (rotation): a tenant that sends many requests waits for its own, and takes no
// more than its share from the others. A request's flow is the one its context carries
// (WithFlow); requests without one (the engine's informers and its own writes) are the
// engine's. Rate implements client-go's flowcontrol.RateLimiter; it is safe for concurrent
// use.
type Rate struct {
	bucket *rate.Limiter

	mu      sync.Mutex
	queue   rotation
	serving bool // a goroutine hands tokens to the queue's waiters
	// granted, when set (by tests), is told of each token handed to a waiter, in order.
	granted func(Flow)
}

// EngineFlow is the flow of requests whose context carries none.
var EngineFlow = Flow{Tenant: "engine", Controller: "engine"}

// NewRate returns a rate of qps requests a second, burst at once.
func NewRate(qps float32, burst int) *Rate {
	return &Rate{bucket: rate.NewLimiter(rate.Limit(qps), max(burst, 1))}
}

type flowKey struct{}

// WithFlow is ctx whose requests count as f's.
func WithFlow(ctx context.Context, f Flow) context.Context {
	return context.WithValue(ctx, flowKey{}, f)
}

// FlowOf is the flow ctx's requests count as: WithFlow's, or EngineFlow.
func FlowOf(ctx context.Context) Flow {
	if f, ok := ctx.Value(flowKey{}).(Flow); ok {
		return f
	}
	return EngineFlow
}

// Wait returns once the request of ctx may be sent, or with ctx's error once ctx ends first.
func (r *Rate) Wait(ctx context.Context) error {
	r.mu.Lock()
	if r.queue.empty() && r.bucket.Allow() {
		r.mu.Unlock()
		return nil
	}
	f, ch := FlowOf(ctx), make(chan struct{}, 1)
	r.queue.push(f, ch)
	if !r.serving {
		r.serving = true
		go r.serve()
	}
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queue.remove(f, ch) {
		return ctx.Err()
	}
	return nil // handed a token as ctx ended: the request may as well go
}

// serve hands each token, as the bucket gives it, to the next waiter in turn, until none
// waits.
func (r *Rate) serve() {
	for {
		r.mu.Lock()
		if r.queue.empty() {
			r.serving = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		_ = r.bucket.Wait(context.Background()) // cannot fail: no deadline, n within burst
		r.mu.Lock()
		if f, ch, ok, _ := r.queue.next(everyTenant); ok {
			if r.granted != nil {
				r.granted(f)
			}
			ch <- struct{}{}
		} // else the waiters gave up meanwhile: the token is lost, as a request's would be
		r.mu.Unlock()
	}
}

func everyTenant(string) bool { return true }

// Accept waits for a token without a context.
func (r *Rate) Accept() { _ = r.Wait(context.Background()) }

// TryAccept takes a token if one is there and no one waits.
func (r *Rate) TryAccept() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queue.empty() && r.bucket.Allow()
}

// QPS is the rate's requests per second.
func (r *Rate) QPS() float32 { return float32(r.bucket.Limit()) }

// Stop does nothing: the rate outlives every client that uses it.
func (r *Rate) Stop() {}
