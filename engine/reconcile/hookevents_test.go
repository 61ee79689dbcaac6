package reconcile

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestEventLimiter(t *testing.T) {
	var l eventLimiter
	now := time.Unix(1000, 0)
	allowed := func(uid types.UID, at time.Time, n int) int {
		got := 0
		for range n {
			if l.allow(uid, at) {
				got++
			}
		}
		return got
	}
	if got := allowed("a", now, 15); got != hookEventBurst {
		t.Fatalf("a burst of 15 allowed %d, want %d", got, hookEventBurst)
	}
	if got := allowed("b", now, 3); got != 3 {
		t.Fatalf("another parent's Events are limited by the first's: %d of 3 allowed", got)
	}
	if got := allowed("a", now.Add(hookEventInterval/2), 1); got != 0 {
		t.Fatal("an Event allowed before a token was refilled")
	}
	if got := allowed("a", now.Add(3*hookEventInterval), 5); got != 3 {
		t.Fatalf("after three intervals %d allowed, want 3", got)
	}
	// Full buckets are forgotten first once the limiter tracks too many parents.
	later := now.Add(20 * hookEventInterval) // a and b are full again
	l.allow("c", later)                      // c is one token short
	for i := range hookEventBuckets - 3 {
		l.allow(types.UID(fmt.Sprint("p", i)), later)
	}
	l.allow("new", later)
	_, a := l.buckets["a"]
	_, c := l.buckets["c"]
	if a || !c || len(l.buckets) != hookEventBuckets-1 {
		t.Fatalf("after eviction: a tracked %v, c tracked %v, %d buckets; want false, true, %d", a, c, len(l.buckets), hookEventBuckets-1)
	}
	// With none full, the bound still holds.
	for i := range 10 {
		l.allow(types.UID(fmt.Sprint("q", i)), later)
	}
	if len(l.buckets) > hookEventBuckets {
		t.Fatalf("%d buckets tracked, want at most %d", len(l.buckets), hookEventBuckets)
	}
}
