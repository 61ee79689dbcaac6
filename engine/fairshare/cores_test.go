package fairshare

import (
	"context"
	"testing"
	"time"
)

// TestCoresBurnersKeepALightCore: on two cores, two tenants whose calls never end hold the
// one heavy slot between them once they turned heavy, and a healthy tenant's calls always
// find a light slot.
func TestCoresBurnersKeepALightCore(t *testing.T) {
	c := NewCores(2, 0, 5*time.Millisecond, time.Hour)
	ctx := context.Background()
	a, err := c.Acquire(ctx, fl("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, fl("b")) // a and b both start light: neither is known to burn
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return a.Heavy() && b.Heavy() })
	if !c.Heavy("a") || !c.Heavy("b") {
		t.Fatal("tenants of calls that turned heavy are not heavy")
	}
	// Both light slots are free again: a healthy tenant's calls start at once.
	for range 3 {
		h, err := c.Acquire(ctx, fl("healthy"))
		if err != nil {
			t.Fatal(err)
		}
		if h.Heavy() {
			t.Fatal("a new call of a healthy tenant started heavy")
		}
		h.Release()
	}
	// a's next call waits for the heavy lane, overbooked by a and b.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Acquire(short, fl("a")); err == nil {
		t.Fatal("a heavy tenant's call started while the heavy lane was overbooked")
	}
	a.Release()
	b.Release()
	a2, err := c.Acquire(ctx, fl("a"))
	if err != nil {
		t.Fatal(err)
	}
	if !a2.Heavy() {
		t.Fatal("a heavy tenant's call started light")
	}
	// One heavy slot on two cores: b waits while a holds it.
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if _, err := c.Acquire(short2, fl("b")); err == nil {
		t.Fatal("two heavy calls ran at once on two cores")
	}
	a2.Release()
	if all, _ := c.heavy.Held(""); all != 0 {
		t.Errorf("%d heavy slots held after every call returned", all)
	}
	if all, _ := c.light.Held(""); all != 0 {
		t.Errorf("%d light slots held after every call returned", all)
	}
}

// TestCoresHeavyEnds: a heavy tenant is light again heavyFor after its last heavy call.
func TestCoresHeavyEnds(t *testing.T) {
	c := NewCores(2, 0, time.Millisecond, time.Minute)
	clock := &fakeClock{now: time.Unix(0, 0)}
	c.now = clock.Now
	call, err := c.Acquire(context.Background(), fl("a"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, call.Heavy)
	clock.Add(time.Hour) // while the call runs, its tenant stays heavy
	if !c.Heavy("a") {
		t.Fatal("a tenant running a heavy call is not heavy")
	}
	call.Release()
	clock.Add(59 * time.Second)
	if !c.Heavy("a") {
		t.Fatal("heavy for less than heavyFor after its last heavy call")
	}
	clock.Add(time.Second)
	if c.Heavy("a") {
		t.Fatal("still heavy heavyFor after its last heavy call")
	}
}

// TestCoresShortCallsStayLight: a call that returns within the quantum leaves its tenant
// light.
func TestCoresShortCallsStayLight(t *testing.T) {
	c := NewCores(2, 0, time.Hour, time.Hour)
	for range 10 {
		call, err := c.Acquire(context.Background(), fl("a"))
		if err != nil {
			t.Fatal(err)
		}
		call.Release()
	}
	if c.Heavy("a") {
		t.Fatal("short calls made their tenant heavy")
	}
}
