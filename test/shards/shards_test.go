// Package shards runs three `metascript run --sharding` processes on one control plane:
// each parent is reconciled by exactly one member, shares are near even, a member stopped
// with SIGTERM hands its parents over at once, one killed with SIGKILL is replaced once its
// Lease expires, and no parent is written by two members in overlapping windows. Who wrote
// what, and when, is read from the API server's audit log: each engine runs as a user of its
// own. Short Lease timings keep the test short; the logic is the same at the defaults.
package shards

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

const (
	namespace = "shards"
	parents   = 90
	lease     = 4 * time.Second
)

var (
	controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
	shardFlags  = []string{"--sharding", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", lease.String(),
		"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms", "--status-interval", "1s"}
)

func TestThreeMembersShareTheParents(t *testing.T) {
	c := engineproc.StartCluster(t, namespace, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, audit := c.Admin, c.Audit
	engines := map[string]*engineproc.Process{}
	for _, user := range []string{"engine-a", "engine-b", "engine-c"} {
		engines[user] = c.Engine(t, user, 2, shardFlags...)
	}
	engineproc.WaitReady(t, ctx, engines["engine-a"], engines["engine-b"], engines["engine-c"])
	for i := range parents {
		if _, err := admin.Resource(enginetest.Fanouts).Namespace(namespace).Create(ctx,
			enginetest.Fanout(fmt.Sprintf("p%d", i), 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitConverged(t, ctx, namespace, parents, 2)

	// Each parent is written by exactly one member, and the shares are near even.
	byParent := writesByParent(t, audit)
	share := map[string]int{}
	for p, ws := range byParent {
		users := map[string]bool{}
		for _, w := range ws {
			users[w.user] = true
		}
		if len(users) != 1 {
			t.Errorf("parent %s written by %d members: %v", p, len(users), users)
		}
		for u := range users {
			share[u]++
		}
	}
	if len(byParent) != parents {
		t.Errorf("%d parents written, want %d", len(byParent), parents)
	}
	ratios := map[string]string{}
	for user, e := range engines {
		v, err := e.Metric(ctx, "metascript_shard_ring_share_ratio")
		if err != nil {
			t.Fatal(err)
		}
		ratios[user] = fmt.Sprintf("%.3f", v[0])
	}
	t.Logf("shares of %d parents: %v; of the ring: %v", parents, share, ratios)
	for user := range engines {
		if n := share[user]; n < parents/3/2 || n > parents/3*3/2 {
			t.Errorf("%s reconciled %d parents, want %d ± 50%%", user, n, parents/3)
		}
	}
	// Each member's metrics say its share; the controller's status says three members.
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		var got []string
		ok := true
		for user, e := range engines {
			v, err := e.MetricSum(ctx, "metascript_shard_parents")
			if err != nil {
				return false, err.Error()
			}
			got = append(got, fmt.Sprintf("%s %v (wrote %d)", user, v[0], share[user]))
			ok = ok && int(v[0]) == share[user]
		}
		return ok, "metascript_shard_parents: " + strings.Join(got, ", ")
	})
	// Each member caches its own parents and their children only, together each once, and
	// the orphans some parent's selector may match (labelled fanout), which whoever owns a
	// parent may adopt; not the API server's own ConfigMaps.
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		all, err := admin.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		orphans := 0
		for _, cm := range all.Items {
			if _, keyed := cm.GetLabels()["fanout"]; keyed && metav1.GetControllerOfNoCopy(&cm) == nil {
				orphans++
			}
		}
		var got []string
		sumParents, sumChildren, ok := 0, 0, true
		for user, e := range engines {
			v, err := e.Metric(ctx, `metascript_cache_objects{namespace="",resource="fanouts.bench.metascript.dev"}`,
				`metascript_cache_objects{namespace="",resource="configmaps"}`)
			if err != nil {
				return false, err.Error()
			}
			p, c := int(v[0]), int(v[1])
			sumParents, sumChildren = sumParents+p, sumChildren+c
			ok = ok && p == share[user] && c == 2*share[user]+orphans
			got = append(got, fmt.Sprintf("%s %d parents, %d ConfigMaps (owns %d)", user, p, c, share[user]))
		}
		ok = ok && sumParents == parents && sumChildren == 2*parents+len(engines)*orphans
		return ok, fmt.Sprintf("cached (%d orphans): %s", orphans, strings.Join(got, "; "))
	})
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		u, err := admin.Resource(controllers).Get(ctx, "scale", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		m, _, _ := unstructured.NestedInt64(u.Object, "status", "members")
		c, _, _ := unstructured.NestedInt64(u.Object, "status", "children")
		return m == 3 && c == 2*parents, fmt.Sprintf("status members %d, children %d; want 3 and %d", m, c, 2*parents)
	})

	// SIGTERM: the member hands over at once; its parents converge within 10 s.
	stopped := time.Now()
	engines["engine-a"].Stop()
	if exited, err := engines["engine-a"].Exited(); !exited || err != nil {
		t.Errorf("the member stopped with SIGTERM exited %v with %v, want a clean exit", exited, err)
	}
	resize(t, ctx, admin, 3)
	c.WaitConverged(t, ctx, namespace, parents, 3)
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("parents converged %v after a member's SIGTERM, want within 10s", took)
	} else {
		t.Logf("every parent converged %v after a member's SIGTERM", took.Round(100*time.Millisecond))
	}

	// SIGKILL: the last member takes the killed one's parents over once its Lease expires,
	// within two lease durations.
	killed := time.Now()
	engines["engine-b"].Kill()
	resize(t, ctx, admin, 4)
	c.WaitConverged(t, ctx, namespace, parents, 4)
	if took := time.Since(killed); took > 2*lease {
		t.Errorf("parents converged %v after a member's SIGKILL, want within two lease durations (%v)", took, 2*lease)
	} else {
		t.Logf("every parent converged %v after a member's SIGKILL (lease %v)", took.Round(100*time.Millisecond), lease)
	}

	// No parent was written by two members in overlapping windows: once another member
	// writes a parent, the one before it never writes it again.
	for p, ws := range writesByParent(t, audit) {
		done := map[string]bool{}
		for i, w := range ws {
			if done[w.user] {
				t.Errorf("parent %s: %s wrote at %s after another member had taken over", p, w.user, w.at.Format(time.StampMicro))
				break
			}
			if i > 0 && ws[i-1].user != w.user {
				done[ws[i-1].user] = true
			}
		}
	}
}

// resize asks every parent for n children.
func resize(t *testing.T, ctx context.Context, admin dynamic.Interface, n int) {
	t.Helper()
	for i := range parents {
		if _, err := admin.Resource(enginetest.Fanouts).Namespace(namespace).Patch(ctx, fmt.Sprintf("p%d", i),
			types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"children":%d}}`, n)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

type write struct {
	user string
	at   time.Time
}

// writesByParent reads the audit log at path: every write (create, update, patch, delete) of
// a Fanout or of a child ConfigMap (named <parent>-<i>), by parent, in the order the API
// server received them.
func writesByParent(t *testing.T, path string) map[string][]write {
	t.Helper()
	out := map[string][]write{}
	err := controlplane.ReadAudit(path, func(ev *controlplane.AuditEvent) {
		if ev.ObjectRef.Namespace != namespace || !strings.HasPrefix(ev.User.Username, "engine-") || !ev.IsWrite() {
			return
		}
		parent := ev.ObjectRef.Name
		switch ev.ObjectRef.Resource {
		case "fanouts":
		case "configmaps":
			parent = parent[:strings.LastIndex(parent, "-")]
		default:
			return
		}
		out[parent] = append(out[parent], write{ev.User.Username, ev.Received})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range out {
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].at.Before(ws[j].at) })
	}
	return out
}
