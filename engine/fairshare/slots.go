package fairshare

import (
	"context"
	"sync"
	"time"
)

// Slots is a number of slots, such as the engine's reconcile seats or its cores, shared by
// many tenants so that none holds more than its fair share of them while others use them. A
// tenant may hold at most max(1, min(n / active, n - 1)) slots, where active counts the
// tenants that hold or wait for a slot or gave their last one back less than linger ago,
// itself included. Even alone a tenant leaves one slot free (when there is more than one): a
// slot cannot be taken back from a holder that keeps it for seconds, so a neighbour arriving
// finds the free one at once instead of waiting for it; beside others, each keeps its share
// and no more. Waiters allowed a slot are served in turn (rotation): tenants, then a tenant's
// controllers, one slot each. Slots is safe for concurrent use.
type Slots struct {
	mu     sync.Mutex
	n      int
	free   int // negative while Take has overbooked
	linger time.Duration
	now    func() time.Time
	held   map[string]int // by tenant
	queue  rotation
	// recent holds when each tenant that holds none gave its last slot back, for linger;
	// released lists those releases in time order (entries recent no longer holds are stale),
	// so that expiring them costs nothing per tenant.
	recent   map[string]time.Time
	released []release
	// active counts the tenants holding, waiting or recent: kept as they change, so that a
	// share costs the same with five thousand tenants as with two.
	active int
	// timer serves waiters again when a recent tenant stops counting as active.
	timer *time.Timer
}

type release struct {
	tenant string
	at     time.Time
}

// NewSlots returns n slots (at least 1), a tenant counting as active for linger after it gave
// its last slot back.
func NewSlots(n int, linger time.Duration) *Slots {
	n = max(n, 1)
	return &Slots{n: n, free: n, linger: linger, now: time.Now, held: map[string]int{},
		recent: map[string]time.Time{}}
}

// Acquire returns once f holds a slot, which it gives back with Release; or with ctx's error
// once ctx ends first, holding nothing.
func (s *Slots) Acquire(ctx context.Context, f Flow) error {
	s.mu.Lock()
	if s.tryLocked(f) {
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	was := s.isActive(f.Tenant)
	s.queue.push(f, ch)
	s.count(was, f.Tenant)
	s.dispatch() // a waiter held back by its share alone needs the timer armed
	s.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if s.forget(f, ch) {
		s.mu.Unlock()
		return ctx.Err()
	}
	s.mu.Unlock()
	s.Release(f) // the slot was handed over as ctx ended: pass it on
	return ctx.Err()
}

// TryAcquire takes a slot for f if one is free for it now, without waiting.
func (s *Slots) TryAcquire(f Flow) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tryLocked(f)
}

// tryLocked takes a free slot for f if its share allows and no waiter of its tenant is ahead
// of it. s.mu is held.
func (s *Slots) tryLocked(f Flow) bool {
	if s.free > 0 && !s.queue.waiting(f.Tenant) && s.held[f.Tenant] < s.share(f.Tenant) {
		s.grant(s.isActive(f.Tenant), f.Tenant)
		return true
	}
	return false
}

// Take gives f a slot at once, even past n or its share: for a holder that moves here from
// elsewhere and cannot wait (Cores, when a call turns heavy). Others are served again only
// once the slots are no longer overbooked.
func (s *Slots) Take(f Flow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grant(s.isActive(f.Tenant), f.Tenant)
}

// Release gives back a slot f holds.
func (s *Slots) Release(f Flow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[f.Tenant]--
	if s.held[f.Tenant] <= 0 {
		delete(s.held, f.Tenant)
		now := s.now()
		s.recent[f.Tenant] = now
		s.released = append(s.released, release{f.Tenant, now})
	}
	s.free++
	s.dispatch()
}

// Held is how many slots are held, and how many of them by tenant.
func (s *Slots) Held(tenant string) (all, by int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n - s.free, s.held[tenant]
}

// share is how many slots tenant may hold now. s.mu is held.
func (s *Slots) share(tenant string) int {
	s.expire()
	active := s.active
	if !s.isActive(tenant) {
		active++
	}
	return max(1, min(s.n/active, s.n-1))
}

// isActive reports whether tenant holds, waits for, or recently gave back a slot. s.mu is
// held.
func (s *Slots) isActive(tenant string) bool {
	_, recent := s.recent[tenant]
	return s.held[tenant] > 0 || s.queue.waiting(tenant) || recent
}

// count adjusts the count of active tenants after tenant changed; was is whether it was
// active before. s.mu is held.
func (s *Slots) count(was bool, tenant string) {
	switch is := s.isActive(tenant); {
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
		if at, ok := s.recent[r.tenant]; ok && at.Equal(r.at) {
			was := s.isActive(r.tenant)
			delete(s.recent, r.tenant)
			s.count(was, r.tenant)
		}
	}
}

// grant gives tenant a slot; was is whether it was active before the caller changed it. s.mu
// is held.
func (s *Slots) grant(was bool, tenant string) {
	s.free--
	s.held[tenant]++
	delete(s.recent, tenant)
	s.count(was, tenant)
}

// dispatch hands free slots to waiters in turn, skipping tenants at their share; when some
// wait only for their share to grow, it arms the timer to try again once the oldest recent
// tenant stops counting. s.mu is held.
func (s *Slots) dispatch() {
	blocked := false
	for s.free > 0 {
		f, ch, ok, passed := s.queue.next(func(tenant string) bool { return s.held[tenant] < s.share(tenant) })
		blocked = blocked || passed
		if !ok {
			break
		}
		s.grant(true, f.Tenant) // it was active: it waited until now
		ch <- struct{}{}
	}
	s.expire()
	if !blocked || s.free <= 0 || len(s.released) == 0 {
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
func (s *Slots) forget(f Flow, ch chan struct{}) bool {
	was := s.isActive(f.Tenant)
	if !s.queue.remove(f, ch) {
		return false
	}
	s.count(was, f.Tenant)
	return true
}
