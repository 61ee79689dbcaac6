package fairshare

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestSlots(n int, linger time.Duration) (*Slots, *fakeClock) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	s := NewSlots(n, linger)
	s.now = clock.Now
	return s, clock
}

// acquireAsync starts an Acquire and returns a channel closed once it holds a slot.
func acquireAsync(t *testing.T, s *Slots, f Flow) <-chan struct{} {
	t.Helper()
	got := make(chan struct{})
	go func() {
		if err := s.Acquire(context.Background(), f); err != nil {
			t.Error(err)
		}
		close(got)
	}()
	waitFor(t, func() bool {
		select {
		case <-got:
			return true
		default:
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.queue.waiting(f.Tenant)
	})
	return got
}

func held(s *Slots, tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[tenant]
}

// fl is the flow of a tenant with one controller of the same name.
func fl(name string) Flow { return Flow{Tenant: name, Controller: name} }

// TestSlotsAlone: a controller alone may hold every slot but one, which a neighbour arriving
// finds free at once.
func TestSlotsAlone(t *testing.T) {
	s, _ := newTestSlots(4, time.Second)
	for range 3 {
		if err := s.Acquire(context.Background(), fl("burner")); err != nil {
			t.Fatal(err)
		}
	}
	more := acquireAsync(t, s, fl("burner")) // the fourth waits
	if err := s.Acquire(context.Background(), fl("healthy")); err != nil {
		t.Fatal(err)
	}
	if n := held(s, "burner"); n != 3 {
		t.Fatalf("burner holds %d, want 3", n)
	}
	s.Release(fl("healthy"))
	s.Release(fl("burner"))
	if n := held(s, "burner"); n != 2 {
		t.Fatalf("burner holds %d slots while its neighbour lingers, want its share of 2", n)
	}
	select {
	case <-more:
		t.Fatal("the burner's waiter was served beyond its share")
	default:
	}
}

// TestSlotsShare: a burner alone holds all slots but one; a neighbour arriving takes that
// one at once, and while the neighbour counts as active (it holds a slot, waits for one, or
// gave one back less than linger ago) the burner is held to its share; once the neighbour is
// idle longer than that, the burner may use every slot but one again.
func TestSlotsShare(t *testing.T) {
	s, clock := newTestSlots(3, time.Second)
	ctx := context.Background()
	for range 2 {
		if err := s.Acquire(ctx, fl("burner")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Acquire(ctx, fl("healthy")); err != nil { // the slot left free, at once
		t.Fatal(err)
	}
	burner := acquireAsync(t, s, fl("burner")) // beyond its share of one beside an active neighbour
	s.Release(fl("healthy"))
	s.Release(fl("burner"))
	if n := held(s, "burner"); n != 1 {
		t.Fatalf("burner holds %d slots while its neighbour lingers, want 1", n)
	}
	if err := s.Acquire(ctx, fl("healthy")); err != nil { // finds a free slot at once
		t.Fatal(err)
	}
	s.Release(fl("healthy"))
	clock.Add(2 * time.Second)
	s.mu.Lock()
	s.dispatch() // what the timer does
	s.mu.Unlock()
	<-burner
	if n := held(s, "burner"); n != 2 {
		t.Fatalf("burner holds %d slots after its neighbour went idle, want 2", n)
	}
}

// TestSlotsTimer: a waiter held back by its share alone is served by the timer once its
// neighbour stops counting as active, with no Release to wake it.
func TestSlotsTimer(t *testing.T) {
	s := NewSlots(3, 20*time.Millisecond)
	ctx := context.Background()
	if err := s.Acquire(ctx, fl("healthy")); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, fl("burner")); err != nil {
		t.Fatal(err)
	}
	s.Release(fl("healthy"))
	got := acquireAsync(t, s, fl("burner"))
	<-got // the test's deadline fails it if the timer never fires
	if n := held(s, "burner"); n != 2 {
		t.Fatalf("burner holds %d slots, want 2", n)
	}
}

// TestSlotsGiveUp: a waiter whose context ends holds nothing and leaves no trace.
func TestSlotsGiveUp(t *testing.T) {
	s, _ := newTestSlots(1, time.Second)
	if err := s.Acquire(context.Background(), fl("a")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.Acquire(ctx, fl("b")); err == nil {
		t.Fatal("Acquire returned a slot the budget did not have")
	}
	s.Release(fl("a"))
	if err := s.Acquire(context.Background(), fl("c")); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free != 0 || !s.queue.empty() || s.held["c"] != 1 || len(s.held) != 1 {
		t.Errorf("free %d, queue %v, held %v; want only c holding the slot", s.free, s.queue, s.held)
	}
}

// TestSlotsNeverOverbooked: under many concurrent controllers, no more than n slots are
// ever held.
func TestSlotsNeverOverbooked(t *testing.T) {
	s := NewSlots(3, time.Millisecond)
	var mu sync.Mutex
	now, most := 0, 0
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := string(rune('a' + i%4))
			for range 50 {
				if err := s.Acquire(context.Background(), fl(name)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				now++
				most = max(most, now)
				mu.Unlock()
				time.Sleep(50 * time.Microsecond)
				mu.Lock()
				now--
				mu.Unlock()
				s.Release(fl(name))
			}
		}()
	}
	wg.Wait()
	if most > 3 || most < 1 {
		t.Errorf("%d slots held at once, want 1 to 3", most)
	}
}

// TestSlotsCountActiveAsTheyChange: the count of active controllers kept as slots are taken,
// waited for, given up on, given back and left to linger is the count a scan of every
// controller finds, at every step of a long random sequence.
func TestSlotsCountActiveAsTheyChange(t *testing.T) {
	s, clock := newTestSlots(2, 5*time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "e"}
	held := map[string]int{}
	scan := func() int {
		n := 0
		for _, c := range names {
			if s.isActive(c) {
				n++
			}
		}
		return n
	}
	for step := range 2000 {
		c := names[rng.IntN(len(names))]
		switch rng.IntN(4) {
		case 0: // take a slot if one comes at once, else give up waiting
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if s.Acquire(ctx, fl(c)) == nil {
				held[c]++
			}
		case 1:
			if held[c] > 0 {
				held[c]--
				s.Release(fl(c))
			}
		case 2:
			clock.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		case 3: // a share asked for, as Acquire asks
			s.mu.Lock()
			s.share(c)
			s.mu.Unlock()
		}
		s.mu.Lock()
		s.expire()
		got, want := s.active, scan()
		s.mu.Unlock()
		if got != want {
			t.Fatalf("step %d: %d active counted, %d found", step, got, want)
		}
	}
}
