// Package leader runs `metascript run` as processes with leader election on one control
// plane: exactly one engine reconciles, a standby takes over from a leader killed with
// SIGKILL once the Lease expires, and from one stopped with SIGTERM as soon as it released
// the Lease; a leader whose Lease is taken stops writing within a retry period and its renew
// deadline, and exits. Who wrote what, and when, is read from the API server's audit log: each engine runs
// as a user of its own. Short Lease timings keep the test short; the logic is the same at the
// defaults.
package leader

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

const namespace = "leader"

var (
	// leaseFlags: a standby takes over 4 s after the leader's last renewal.
	leaseFlags = []string{"--leader-elect=true", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", "4s",
		"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"}
)

func TestOneLeaderReconcilesAndAStandbyTakesOver(t *testing.T) {
	c := engineproc.StartCluster(t, namespace, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, audit := c.Admin, c.Audit
	start := func(user string) *engineproc.Process { return c.Engine(t, user, 2, leaseFlags...) }
	parents := 0
	addParents := func(n int) {
		for range n {
			parents++
			if _, err := admin.Resource(enginetest.Fanouts).Namespace(namespace).Create(ctx,
				enginetest.Fanout(fmt.Sprintf("p%d", parents), 2), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Two engines: one leads and converges every parent, the other reconciles nothing.
	a, b := start("engine-a"), start("engine-b")
	addParents(10)
	leaderOf := func(engines ...*engineproc.Process) *engineproc.Process {
		var leader *engineproc.Process
		engineproc.WaitFor(t, ctx, func() (bool, string) {
			leader = nil
			ready := 0
			for _, e := range engines {
				if e.Ready(ctx) {
					leader = e
					ready++
				}
			}
			return ready == 1, fmt.Sprintf("%d of %d engines ready, want exactly one", ready, len(engines))
		})
		return leader
	}
	leader := leaderOf(a, b)
	standby, standbyUser := a, "engine-a"
	if leader == a {
		standby, standbyUser = b, "engine-b"
	}
	c.WaitConverged(t, ctx, namespace, parents, 2)
	if got := reconciles(t, ctx, standby); got != 0 {
		t.Errorf("the standby reconciled %v times, want 0", got)
	}
	if got := reconciles(t, ctx, leader); got < float64(parents) {
		t.Errorf("the leader reconciled %v times, want at least %d", got, parents)
	}
	checkLeadership(t, ctx, "the leader", leader, 1, 1)
	checkLeadership(t, ctx, "the standby", standby, 0, 0)

	// SIGKILL: the standby takes over once the Lease expires, and converges new parents.
	killed := time.Now()
	leader.Kill()
	addParents(10)
	if got := leaderOf(standby); got != standby {
		t.Fatal("no engine leads after the leader was killed")
	}
	t.Logf("takeover after SIGKILL: %v (lease duration 4s)", time.Since(killed).Round(100*time.Millisecond))
	c.WaitConverged(t, ctx, namespace, parents, 2)
	if w := writes(t, audit, standbyUser); len(w) == 0 || w[0].Before(killed) {
		t.Errorf("the standby's first write: %v, want one after the leader was killed at %v", w, killed)
	}
	checkLeadership(t, ctx, "the standby that took over", standby, 1, 1)

	// SIGTERM: the leader stops, releases the Lease, and a new standby takes over at once.
	next := start("engine-c")
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		return !next.Ready(ctx) && standby.Ready(ctx), "the new engine must stand by while the old one leads"
	})
	checkLeadership(t, ctx, "a new standby", next, 0, 0)
	stopped := time.Now()
	standby.Stop()
	if exited, err := standby.Exited(); !exited || err != nil {
		t.Errorf("the leader stopped with SIGTERM exited %v with %v, want a clean exit", exited, err)
	}
	addParents(10)
	if got := leaderOf(next); got != next {
		t.Fatal("no engine leads after the leader stopped")
	}
	t.Logf("takeover after SIGTERM: %v (the Lease was released)", time.Since(stopped).Round(100*time.Millisecond))
	c.WaitConverged(t, ctx, namespace, parents, 2)

	// A leader whose Lease is taken from it, while parents keep coming, stops writing within a
	// retry period and its renew deadline of its last renewal, and exits with an error.
	busy, stopBusy := context.WithCancel(ctx)
	defer stopBusy()
	go func() {
		for i := 0; busy.Err() == nil; i++ {
			_, _ = admin.Resource(enginetest.Fanouts).Namespace(namespace).Create(busy,
				enginetest.Fanout(fmt.Sprintf("busy%d", i), 2), metav1.CreateOptions{})
			time.Sleep(50 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second) // the leader is writing for the busy parents
	leases := kubernetes.NewForConfigOrDie(c.Config).CoordinationV1().Leases("default")
	lease, err := leases.Get(ctx, "metascript-engine", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stolen := time.Now()
	thief, now := "thief", metav1.NewMicroTime(stolen)
	lease.Spec.HolderIdentity, lease.Spec.RenewTime, lease.Spec.AcquireTime = &thief, &now, &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		exited, err := next.Exited()
		return exited && err != nil, fmt.Sprintf("the engine that lost its Lease: exited %v (%v), want an exit with an error", exited, err)
	})
	stopBusy()
	w := writes(t, audit, "engine-c")
	before, after := 0, 0
	for _, at := range w {
		switch {
		case at.Before(stolen) && at.After(stolen.Add(-time.Second)):
			before++
		// A retry period and the renew deadline, and a quarter second for a request already
		// on the wire when the engine gave up (no fencing: docs/operations.md).
		case at.After(stolen.Add(3750 * time.Millisecond)):
			after++
		}
	}
	if before == 0 {
		t.Errorf("the leader made no write in the second before its Lease was taken: nothing shows it stopped")
	}
	if after > 0 {
		t.Errorf("the leader made %d writes more than a retry period and its renew deadline after its Lease was taken, the last %v after",
			after, w[len(w)-1].Sub(stolen))
	}
}

// writes returns when the API server received each write (create, update, patch, delete) of
// user other than to its Lease, in order, from the audit log at path.
func writes(t *testing.T, path, user string) []time.Time {
	t.Helper()
	var out []time.Time
	err := controlplane.ReadAudit(path, func(ev *controlplane.AuditEvent) {
		if ev.User.Username == user && ev.ObjectRef.Resource != "leases" && ev.IsWrite() {
			out = append(out, ev.Received)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// reconciles is how many reconciles engine e has made, by its metrics.
func reconciles(t *testing.T, ctx context.Context, e *engineproc.Process) float64 {
	t.Helper()
	v, err := e.MetricSum(ctx, "metascript_reconciles_total")
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

// checkLeadership checks engine e's metascript_leader_election_is_leader and
// metascript_leader_election_transitions_total, once its metrics server answers (a standby's
// may not listen yet).
func checkLeadership(t *testing.T, ctx context.Context, who string, e *engineproc.Process, isLeader, transitions float64) {
	t.Helper()
	var v []float64
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		var err error
		v, err = e.Metric(ctx, `metascript_leader_election_is_leader{lease="default/metascript-engine"}`,
			`metascript_leader_election_transitions_total{lease="default/metascript-engine"}`)
		return err == nil, fmt.Sprintf("%s: metrics: %v", who, err)
	})
	if v[0] != isLeader || v[1] != transitions {
		t.Errorf("%s: is_leader %v and transitions %v, want %v and %v", who, v[0], v[1], isLeader, transitions)
	}
}
