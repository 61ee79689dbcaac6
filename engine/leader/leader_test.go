package leader

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestNewRefusesTimingsThatCannotHold: the argument that two leaders never write at once
// needs retry period < renew deadline, and the two together < lease duration.
func TestNewRefusesTimingsThatCannotHold(t *testing.T) {
	cases := []struct {
		lease, renew, retry time.Duration
		ok                  bool
	}{
		{0, 0, 0, true}, // client-go's defaults: 15 s, 10 s, 2 s
		{4 * time.Second, 3 * time.Second, time.Second, false}, // no margin left
		{10 * time.Second, 10 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 20 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 10 * time.Second, 10 * time.Second, false},
		{12 * time.Second, 10 * time.Second, 2 * time.Second, false}, // no margin left
		{4 * time.Second, 3 * time.Second, 500 * time.Millisecond, true},
	}
	for _, c := range cases {
		_, err := New(Config{Client: fake.NewClientset(), Namespace: "ns", Name: "lease",
			LeaseDuration: c.lease, RenewDeadline: c.renew, RetryPeriod: c.retry})
		if (err == nil) != c.ok {
			t.Errorf("lease %v, renew %v, retry %v: error %v, want ok %v", c.lease, c.renew, c.retry, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "retry period") {
			t.Errorf("error %q does not say which timings", err)
		}
	}
}

// TestObserveFollowsLeading: Observe hears false at the start, true when the process starts
// leading and false when it stops, for a leader and for the standby that takes over after it
// released the Lease.
func TestObserveFollowsLeading(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type elector struct {
		seen    chan bool
		stop    context.CancelFunc
		done    chan error
		leading chan struct{}
	}
	start := func(identity string) *elector {
		el := &elector{seen: make(chan bool, 8), done: make(chan error, 1), leading: make(chan struct{})}
		var e *Elector
		e, err := New(Config{Client: client, Namespace: "ns", Name: "lease", Identity: identity,
			LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
			Observe: func(leading bool) {
				if leading != e.Leading() {
					t.Errorf("%s: Observe(%v) while Leading() is %v", identity, leading, !leading)
				}
				el.seen <- leading
			}})
		if err != nil {
			t.Fatal(err)
		}
		run, stop := context.WithCancel(ctx)
		el.stop = stop
		go func() {
			el.done <- e.Run(run, func(lead context.Context) error {
				close(el.leading)
				<-lead.Done()
				return nil
			}, func() { t.Errorf("%s lost the Lease", identity) })
		}()
		return el
	}
	expect := func(name string, el *elector, want ...bool) {
		t.Helper()
		for _, w := range want {
			select {
			case got := <-el.seen:
				if got != w {
					t.Fatalf("%s: Observe(%v), want Observe(%v)", name, got, w)
				}
			case <-ctx.Done():
				t.Fatalf("%s: no Observe(%v)", name, w)
			}
		}
	}
	a := start("a")
	expect("a", a, false, true)
	<-a.leading
	b := start("b")
	expect("b", b, false)
	a.stop() // a graceful stop releases the Lease: b takes over
	if err := <-a.done; err != nil {
		t.Fatalf("a: Run: %v", err)
	}
	expect("a", a, false)
	expect("b", b, true)
	b.stop()
	if err := <-b.done; err != nil {
		t.Fatalf("b: Run: %v", err)
	}
	expect("b", b, false)
	for name, el := range map[string]*elector{"a": a, "b": b} {
		select {
		case got := <-el.seen:
			t.Errorf("%s: an extra Observe(%v)", name, got)
		default:
		}
	}
}
