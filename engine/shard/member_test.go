package shard

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.RunTests(m, &cp) }

// cuttable is a transport that fails every request while cut: a member cut off from the
// API server, as a crashed or partitioned one looks to the others.
type cuttable struct {
	next http.RoundTripper
	cut  *atomic.Bool
}

func (c cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("cut off")
	}
	return c.next.RoundTrip(r)
}

// running is a member running a stand-in engine that blocks until its context ends.
type running struct {
	*Member
	cut    atomic.Bool
	cancel context.CancelFunc
	done   chan error
	gains  atomic.Int32
	lostAt atomic.Int64
}

func start(t *testing.T, ring, id string) *running { t.Helper(); return startWith(t, ring, id, nil) }

// startWith starts a member whose caches, when not nil, catch up with each view as they say.
func startWith(t *testing.T, ring, id string, caches Caches) *running {
	t.Helper()
	r := &running{done: make(chan error, 1)}
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return cuttable{rt, &r.cut} })
	m, err := New(Config{Client: kubernetes.NewForConfigOrDie(cfg), Namespace: "default", Ring: ring, Identity: id,
		LeaseDuration: 4 * time.Second, RenewDeadline: 2500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.Member = m
	if caches != nil {
		m.ShareCaches(caches)
	}
	m.OnGain(func() { r.gains.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- m.Run(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil },
			func() { r.lostAt.Store(time.Now().UnixNano()) })
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// owners counts, for each key, the members that own it now.
func owners(keys []string, members ...*running) (each map[*running]int, unowned, twice int) {
	each = map[*running]int{}
	for _, k := range keys {
		n := 0
		for _, m := range members {
			if m.Owns(k) {
				each[m]++
				n++
			}
		}
		switch {
		case n == 0:
			unowned++
		case n > 1:
			twice++
		}
	}
	return each, unowned, twice
}

func TestMembersShareAndHandOver(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	ks := keys(300)
	a := start(t, "handover", "a")
	waitFor(t, "a to reconcile alone", a.Joined)
	if _, unowned, _ := owners(ks, a); unowned != 0 {
		t.Fatalf("a alone leaves %d keys unowned", unowned)
	}

	b := start(t, "handover", "b")
	waitFor(t, "both to see two members", func() bool { return a.Members() == 2 && b.Members() == 2 })
	two := NewRing([]string{a.Name(), b.Name()})

	// A reconcile in flight across a view change holds up every member: c joins while a
	// still works on a key that moves to c.
	waitFor(t, "a and b to share the work", func() bool { return a.Joined() && b.Joined() })
	each, unowned, twice := owners(ks, a, b)
	if unowned != 0 || twice != 0 || each[a] < 75 || each[b] < 75 {
		t.Fatalf("two members: a owns %d, b %d, unowned %d, owned twice %d", each[a], each[b], unowned, twice)
	}
	var held string
	three := NewRing([]string{a.Name(), b.Name(), leaseName("handover", "c")})
	for _, k := range ks {
		if two.Owner(k) == a.Name() && three.Owner(k) != a.Name() {
			held = k
			break
		}
	}
	end, ok := a.Begin(held)
	if !ok {
		t.Fatalf("a may not begin %s, which it owns", held)
	}
	c := start(t, "handover", "c")
	waitFor(t, "every member to see three", func() bool { return a.Members() == 3 && b.Members() == 3 && c.Members() == 3 })
	for _, m := range []*running{a, b, c} {
		if m.Joined() {
			t.Fatalf("%s is reconciling while a still holds a reconcile begun under the old view", m.Name())
		}
	}
	end()
	waitFor(t, "three members to share the work", func() bool { return a.Joined() && b.Joined() && c.Joined() })
	each, unowned, twice = owners(ks, a, b, c)
	if unowned != 0 || twice != 0 {
		t.Fatalf("three members: unowned %d, owned twice %d", unowned, twice)
	}
	for _, m := range []*running{a, b, c} {
		if each[m] < 50 || each[m] > 150 {
			t.Errorf("%s owns %d of 300 keys, want 100 ± 50%%", m.Name(), each[m])
		}
		if m.gains.Load() == 0 {
			t.Errorf("%s was never told it gained parents", m.Name())
		}
	}

	// A member stopped gracefully deletes its Lease: the others take over at once.
	c.cancel()
	if err := <-c.done; err != nil {
		t.Fatalf("c stopped with %v", err)
	}
	c.done <- nil // for the cleanup
	_, err := kubernetes.NewForConfigOrDie(cp.Config).CoordinationV1().Leases("default").Get(context.Background(), c.Name(), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("c's Lease after a graceful stop: %v", err)
	}
	waitFor(t, "a and b to share c's keys", func() bool {
		return a.Members() == 2 && a.Joined() && b.Joined()
	})
	if _, unowned, twice := owners(ks, a, b); unowned != 0 || twice != 0 {
		t.Fatalf("after c left: unowned %d, owned twice %d", unowned, twice)
	}

	// A member cut off from the API server gives up before the other takes its keys over.
	var gaveUp, tookOver atomic.Int64
	var once sync.Once
	a.OnGain(func() { once.Do(func() { tookOver.Store(time.Now().UnixNano()) }) })
	b.cut.Store(true)
	waitFor(t, "a to reconcile alone again", func() bool { return a.Members() == 1 && a.Joined() })
	err = <-b.done
	b.done <- nil
	if !errors.Is(err, ErrLost) || b.lostAt.Load() == 0 {
		t.Fatalf("b cut off: Run returned %v, lost called at %d", err, b.lostAt.Load())
	}
	gaveUp.Store(b.lostAt.Load())
	waitFor(t, "a's gain to be recorded", func() bool { return tookOver.Load() != 0 })
	if tookOver.Load() <= gaveUp.Load() {
		t.Fatalf("a took b's keys over %s before b gave up", time.Duration(gaveUp.Load()-tookOver.Load()))
	}
	if b.Owns(ks[0]) || b.Owns(ks[1]) {
		t.Fatal("b still owns keys after giving up")
	}
	waitFor(t, "b's Lease to be removed", func() bool {
		_, err := kubernetes.NewForConfigOrDie(cp.Config).CoordinationV1().Leases("default").Get(context.Background(), b.Name(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestNewRefusesTimingsWithoutMargin(t *testing.T) {
	_, err := New(Config{Client: kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"}), Namespace: "x", Ring: "r",
		LeaseDuration: 10 * time.Second, RenewDeadline: 9 * time.Second, RetryPeriod: 2 * time.Second})
	if err == nil {
		t.Fatal("a retry period and renew deadline longer together than the lease duration were accepted")
	}
}

func TestLeaseName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"metascript-engine", "metascript-7d9f-abcde"}: "metascript-engine-metascript-7d9f-abcde",
		{"ring", "My_Laptop.local"}:                    "ring-my-laptop.local",
	} {
		if got := leaseName(in[0], in[1]); got != want {
			t.Errorf("leaseName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// fakeCaches catch up with a view once ready, and count the views they were asked to.
type fakeCaches struct {
	reshards atomic.Int32
	ready    atomic.Bool
}

func (c *fakeCaches) Reshard() func() bool {
	c.reshards.Add(1)
	return c.ready.Load
}

// A member reconciles under a view only once its caches hold what the view gives it; the
// counts each member publishes in its Lease add up on every member.
func TestMemberWaitsForItsCachesAndSumsCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	caches := &fakeCaches{}
	a := startWith(t, "caches", "a", caches)
	waitFor(t, "a to acknowledge its first view", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.acked != "" && caches.reshards.Load() > 0
	})
	for range 20 { // several renewals: nothing but the caches holds a up
		if a.Joined() || a.Owns("any") {
			t.Fatal("a reconciles before its caches caught up with its view")
		}
		time.Sleep(100 * time.Millisecond)
	}
	caches.ready.Store(true)
	waitFor(t, "a to reconcile once its caches caught up", a.Joined)

	b := start(t, "caches", "b")
	waitFor(t, "both to reconcile under a view of two", func() bool {
		return a.Members() == 2 && b.Members() == 2 && a.Joined() && b.Joined()
	})
	if caches.reshards.Load() < 2 {
		t.Fatalf("a's caches were asked to catch up with %d views, want 2 or more", caches.reshards.Load())
	}
	a.RecordCounts("compositecontroller/x", 3, 10)
	b.RecordCounts("compositecontroller/x", 4, 20)
	total := func(m *running, parents, children int) func() bool {
		return func() bool { p, c := m.Totals("compositecontroller/x"); return p == parents && c == children }
	}
	waitFor(t, "a to sum both members' counts", total(a, 7, 30))
	waitFor(t, "b to sum both members' counts", total(b, 7, 30))
	a.RecordCounts("compositecontroller/x", -1, 0)
	waitFor(t, "b to drop what a no longer counts", total(b, 4, 20))
}
