package reconcile

import (
	"context"

	"metascript.dev/metascript/engine/fairshare"
)

// seat is one reconcile's hold on a shared reconcile seat (Env.Seats). The reconcile's
// goroutine alone uses it.
type seat struct {
	seats *fairshare.Slots
	flow  fairshare.Flow
	held  bool
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
	if err := s.seats.Acquire(ctx, s.flow); err != nil {
		return err
	}
	s.held = true
	return nil
}

// give gives the seat back, if held.
func (s *seat) give() {
	if s.held {
		s.held = false
		s.seats.Release(s.flow)
	}
}

// retake takes a seat again after a wait. When ctx ends first the reconcile goes on without
// one: it is stopping, and gives nothing back.
func (s *seat) retake(ctx context.Context) {
	_ = s.take(ctx)
}
