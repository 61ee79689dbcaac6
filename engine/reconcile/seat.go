package reconcile

import (
	"context"
	"sync"

	"metascript.dev/metascript/engine/fairshare"
)

// seat is one reconcile's hold on a shared reconcile seat (Env.Seats). The calls a reconcile
// makes in parallel (a MapController's map calls) share it: safe for concurrent use.
type seat struct {
	seats *fairshare.Slots
	flow  fairshare.Flow

	// mu is held while a seat is taken again, so that a call leaving meanwhile waits for it
	// rather than giving back a seat not yet held.
	mu   sync.Mutex
	held bool
	away int // calls waiting, seat given back, on something slow (a webhook)
}

type seatKey struct{}

// withSeat is ctx carrying the reconcile's seat, so that what waits long inside the
// reconcile (a webhook) can free it meanwhile.
func withSeat(ctx context.Context, s *seat) context.Context {
	return context.WithValue(ctx, seatKey{}, s)
}

// seatOf is the seat ctx carries, nil for none.
func seatOf(ctx context.Context) *seat {
	s, _ := ctx.Value(seatKey{}).(*seat)
	return s
}

// take waits for a seat.
func (s *seat) take(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeLocked(ctx)
}

func (s *seat) takeLocked(ctx context.Context) error {
	if err := s.seats.Acquire(ctx, s.flow); err != nil {
		return err
	}
	s.held = true
	return nil
}

// give gives the seat back, if held.
func (s *seat) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.giveLocked()
}

func (s *seat) giveLocked() {
	if s.held {
		s.held = false
		s.seats.Release(s.flow)
	}
}

// leave gives the seat back while one of the reconcile's calls waits on something slow; the
// returned back ends that wait, and the last call of the reconcile to come back takes a seat
// again. When ctx ends first the reconcile goes on without one: it is stopping.
func (s *seat) leave(ctx context.Context) (back func()) {
	s.mu.Lock()
	s.away++
	s.giveLocked()
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.away--; s.away == 0 {
			_ = s.takeLocked(ctx)
		}
	}
}
