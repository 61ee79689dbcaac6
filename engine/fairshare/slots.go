package fairshare

import (
	"context"
	"sync"
	"time"
)

// Slots is a number of slots, such as the engine's cores for inline hook calls, shared by
// many controllers so that none holds more than its fair share of them while others use
// them. A controller may hold at most max(1, min(n / active, n - 1)) slots, where active
// counts the controllers that hold or wait for a slot or gave their last one back less than
// linger ago, itself included. Even alone a controller leaves one slot free (when there is
// more than one): a slot cannot be taken back from a call that runs for seconds (a hook
// burning its whole budget), so a neighbour arriving finds the free one at once instead of
// waiting out a burning call; beside others, each keeps its share and no more.
// Waiters allowed a slot are served in turn, one slot each, as Budget's are. Slots is safe
// for concurrent use.
type Slots struct {
	mu     sync.Mutex
	n      int
	free   int
	linger time.Duration
	now    func() time.Time
	held   map[string]int
	// waiting holds each controller's waiters in arrival order; turn holds the controllers
	// with waiters, in the order they are served.
	waiting map[string][]chan struct{}
	turn    []string
	// recent holds when each controller that holds none gave its last slot back, for linger;
	// released lists those releases in time order (entries recent no longer holds are stale),
	// so that expiring them costs nothing per controller.
	recent   map[string]time.Time
	released []release
	// active counts the controllers holding, waiting or recent: kept as they change, so that
	// a share costs the same with five thousand controllers as with two.
	active int
	// timer serves waiters again when a recent controller stops counting as active.
	timer *time.Timer
}

type release struct {
	controller string
	at         time.Time
}

// NewSlots returns n slots (at least 1), a controller counting as active for linger after
// it gave its last slot back.
func NewSlots(n int, linger time.Duration) *Slots {
	n = max(n, 1)
	return &Slots{n: n, free: n, linger: linger, now: time.Now, held: map[string]int{},
		waiting: map[string][]chan struct{}{}, recent: map[string]time.Time{}}
}

// Acquire returns once controller holds a slot, which it gives back with Release; or with
// ctx's error once ctx ends first, holding nothing.
func (s *Slots) Acquire(ctx context.Context, controller string) error {
	s.mu.Lock()
	// A free slot means no waiter may take it: a newcomer under its share takes it, unless
	// its own earlier waiters are still queued.
	if s.free > 0 && len(s.waiting[controller]) == 0 && s.held[controller] < s.share(controller) {
		s.grant(s.isActive(controller), controller)
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	if len(s.waiting[controller]) == 0 {
		s.turn = append(s.turn, controller)
	}
	was := s.isActive(controller)
	s.waiting[controller] = append(s.waiting[controller], ch)
	s.count(was, controller)
	s.dispatch() // a waiter held back by its share alone needs the timer armed
	s.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if s.forget(controller, ch) {
		s.mu.Unlock()
		return ctx.Err()
	}
	s.mu.Unlock()
	s.Release(controller) // the slot was handed over as ctx ended: pass it on
	return ctx.Err()
}

// Release gives back a slot controller holds.
func (s *Slots) Release(controller string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[controller]--
	if s.held[controller] <= 0 {
		delete(s.held, controller)
		now := s.now()
		s.recent[controller] = now
		s.released = append(s.released, release{controller, now})
	}
	s.free++
	s.dispatch()
}

// share is how many slots controller may hold now. s.mu is held.
func (s *Slots) share(controller string) int {
	s.expire()
	active := s.active
	if !s.isActive(controller) {
		active++
	}
	return max(1, min(s.n/active, s.n-1))
}

// isActive reports whether controller holds, waits for, or recently gave back a slot. s.mu
// is held.
func (s *Slots) isActive(controller string) bool {
	_, recent := s.recent[controller]
	return s.held[controller] > 0 || len(s.waiting[controller]) > 0 || recent
}

// count adjusts the count of active controllers after controller changed; was is whether it
// was active before. s.mu is held.
func (s *Slots) count(was bool, controller string) {
	switch is := s.isActive(controller); {
	case is && !was:
		s.active++
	case was && !is:
		s.active--
	}
}

// expire ends the linger of releases older than it. s.mu is held.
func (s *Slots) expire() {
	now := s.now()
	for len(s.released) > 0 && now.Sub(s.released[0].at) >= s.linger {
		r := s.released[0]
		s.released = s.released[1:]
		if at, ok := s.recent[r.controller]; ok && at.Equal(r.at) {
			was := s.isActive(r.controller)
			delete(s.recent, r.controller)
			s.count(was, r.controller)
		}
	}
}

// grant gives controller a slot; was is whether it was active before the caller changed it.
// s.mu is held and a slot is free.
func (s *Slots) grant(was bool, controller string) {
	s.free--
	s.held[controller]++
	delete(s.recent, controller)
	s.count(was, controller)
}

// dispatch hands free slots to waiters in turn, skipping controllers at their share; when
// some wait only for their share to grow, it arms the timer to try again once the oldest
// recent controller stops counting. s.mu is held.
func (s *Slots) dispatch() {
	blocked := false
	for i := 0; s.free > 0 && i < len(s.turn); {
		controller := s.turn[i]
		if s.held[controller] >= s.share(controller) {
			blocked = true
			i++
			continue
		}
		was := s.isActive(controller)
		queue := s.waiting[controller]
		ch := queue[0]
		s.turn = append(s.turn[:i:i], s.turn[i+1:]...)
		if len(queue) == 1 {
			delete(s.waiting, controller)
		} else {
			s.waiting[controller] = queue[1:]
			s.turn = append(s.turn, controller) // its next waiter comes after everyone else's
		}
		s.grant(was, controller)
		ch <- struct{}{}
	}
	s.expire()
	if !blocked || s.free == 0 || len(s.released) == 0 {
		return
	}
	wait := s.linger - s.now().Sub(s.released[0].at)
	if s.timer == nil {
		s.timer = time.AfterFunc(wait, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.dispatch()
		})
		return
	}
	s.timer.Reset(wait)
}

// forget removes a waiter that gave up; false when it was already handed a slot. s.mu is
// held.
func (s *Slots) forget(controller string, ch chan struct{}) bool {
	queue := s.waiting[controller]
	for i, c := range queue {
		if c != ch {
			continue
		}
		queue = append(queue[:i:i], queue[i+1:]...)
		if len(queue) > 0 {
			s.waiting[controller] = queue
			return true
		}
		was := s.isActive(controller)
		delete(s.waiting, controller)
		s.count(was, controller)
		for j, name := range s.turn {
			if name == controller {
				s.turn = append(s.turn[:j:j], s.turn[j+1:]...)
				break
			}
		}
		return true
	}
	return false
}
