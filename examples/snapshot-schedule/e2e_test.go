package snapshotschedule

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install the
// example's CRDs, then its controller in each language, and drive a schedule with a short
// interval and TTL through claims created, snapshotted, re-snapshotted and deleted. No
// kube-controller-manager runs: claims stay Pending, and nothing removes a deleted claim's
// pvc-protection finalizer but the test.

var env *enginetest.Env

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{"crd.yaml"}}, &env)
}

const (
	exampleAPI = "examples.metascript.dev/v1alpha1"
	runner     = "mapcontroller/snapshot-schedule"
	mapKey     = "metascript.dev/map-key"
	wait       = 30 * time.Second
)

var snapshots = schema.GroupVersionResource{Group: "examples.metascript.dev", Version: "v1alpha1", Resource: "snapshots"}

// languages are the two implementations of the controller.
var languages = []struct {
	name string
	lang scripting.Language
	file string
}{
	{"starlark", scripting.Starlark, "controller-starlark.yaml"},
	{"javascript", scripting.JavaScript, "controller-javascript.yaml"},
}

// requireLanguage fails the test unless the engine runs hooks in lang that use the time
// module, the one stdlib module the controllers use.
func requireLanguage(t *testing.T, lang scripting.Language) {
	t.Helper()
	exampletest.RequireSupport(t, env.Engine.Runtime, lang, "time")
}

// installController creates the controller of file, waits until it runs, and on cleanup
// deletes it and waits until its runner has stopped, so that the next test may install a
// controller of the same name.
func installController(t *testing.T, file string) {
	t.Helper()
	mc := env.Create(t, "", enginetest.ObjectsFromFile(t, file)[0])
	t.Cleanup(func() {
		env.Delete(t, mc)
		enginetest.Eventually(t, wait, func() (bool, string) {
			n := testutil.ToFloat64(env.Engine.Metrics.Controllers.WithLabelValues("running"))
			return env.Get(t, mc.GetAPIVersion(), mc.GetKind(), "", mc.GetName()) == nil && n == 0,
				fmt.Sprintf("controller still present or %v runners running", n)
		})
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, mc.GetAPIVersion(), mc.GetKind(), "", mc.GetName())
		g, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
		return g == cur.GetGeneration() && enginetest.Condition(cur, "HooksCompiled") == "True" && enginetest.Condition(cur, "Ready") == "True",
			fmt.Sprintf("controller status = %v", cur.Object["status"])
	})
}

// createClaim creates a 1Gi PersistentVolumeClaim labelled app=app.
func createClaim(t *testing.T, ns, name, app string) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, labels: {app: %s}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`, name, app)))
}

// deleteClaim deletes a claim and, standing in for kube-controller-manager, lifts the
// pvc-protection finalizer the API server puts on claims, so that the claim goes.
func deleteClaim(t *testing.T, c *unstructured.Unstructured) {
	t.Helper()
	env.Delete(t, c)
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "v1", "PersistentVolumeClaim", c.GetNamespace(), c.GetName())
		if cur != nil && len(cur.GetFinalizers()) > 0 {
			env.Patch(t, cur, `{"metadata":{"finalizers":null}}`)
		}
		return cur == nil, fmt.Sprintf("claim %s still exists", c.GetName())
	})
}

// snapshotsOf lists the snapshots in ns of each claim, by claim name, leaving out those
// being deleted.
func snapshotsOf(t *testing.T, ns string) map[string][]*unstructured.Unstructured {
	t.Helper()
	list, err := env.Dynamic.Resource(snapshots).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*unstructured.Unstructured{}
	for i := range list.Items {
		s := &list.Items[i]
		if s.GetDeletionTimestamp() == nil {
			claim, _, _ := unstructured.NestedString(s.Object, "spec", "claimName")
			out[claim] = append(out[claim], s)
		}
	}
	return out
}

func names(list []*unstructured.Unstructured) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.GetName())
	}
	slices.Sort(out)
	return out
}

func statusCount(obj *unstructured.Unstructured, path ...string) int64 {
	n, _, _ := unstructured.NestedInt64(obj.Object, append([]string{"status"}, path...)...)
	return n
}

func hookCalls(hook string, lang scripting.Language) float64 {
	return testutil.ToFloat64(env.Engine.Metrics.HookInvocations.WithLabelValues(runner, hook, string(lang), "success"))
}

// TestSnapshotSchedule drives one schedule (interval 2s, TTL 6s) over three claims, two of
// which it selects, in each language.
func TestSnapshotSchedule(t *testing.T) {
	for _, l := range languages {
		t.Run(l.name, func(t *testing.T) {
			requireLanguage(t, l.lang)
			installController(t, l.file)
			ns := env.Namespace(t)
			a := createClaim(t, ns, "data-a", "my-app")
			b := createClaim(t, ns, "data-b", "my-app")
			createClaim(t, ns, "other", "elsewhere")
			sched := env.Create(t, ns, enginetest.Object(t, `
apiVersion: examples.metascript.dev/v1alpha1
kind: SnapshotSchedule
metadata: {name: my-app}
spec:
  snapshotInterval: 2s
  snapshotTTL: 6s
  selector: {matchLabels: {app: my-app}}
`))
			t.Cleanup(func() { env.Delete(t, sched) }) // before the controller goes

			// A snapshot per selected claim, owned by the schedule and tagged with its
			// claim's UID; the status counts the claims and the snapshots.
			var first map[string][]*unstructured.Unstructured
			enginetest.Eventually(t, wait, func() (bool, string) {
				first = snapshotsOf(t, ns)
				cur := env.Get(t, exampleAPI, "SnapshotSchedule", ns, "my-app")
				total := int64(len(first["data-a"]) + len(first["data-b"]))
				return len(first["data-a"]) > 0 && len(first["data-b"]) > 0 &&
						statusCount(cur, "inputs", "persistentvolumeclaims", "total") == 2 &&
						statusCount(cur, "outputs", "snapshots", "total") == total &&
						enginetest.Condition(cur, "Mapped") == "True",
					fmt.Sprintf("snapshots %v; status %v", first, cur.Object["status"])
			})
			if len(first["other"]) > 0 {
				t.Fatalf("the claim the selector does not match was snapshotted: %v", names(first["other"]))
			}
			for _, c := range []*unstructured.Unstructured{a, b} {
				s := first[c.GetName()][0]
				ref := metav1.GetControllerOf(s)
				if ref == nil || ref.UID != sched.GetUID() || ref.Kind != "SnapshotSchedule" {
					t.Errorf("snapshot %s controller reference = %+v, want the schedule", s.GetName(), ref)
				}
				if s.GetLabels()[mapKey] != string(c.GetUID()) {
					t.Errorf("snapshot %s labels = %v, want %s = the claim's UID", s.GetName(), s.GetLabels(), mapKey)
				}
			}

			// The interval passes: a second snapshot comes by itself (resyncAfterSeconds), and
			// the first is not rewritten.
			b0 := first["data-b"][0]
			enginetest.Eventually(t, wait, func() (bool, string) {
				got := names(snapshotsOf(t, ns)["data-b"])
				return len(got) > 0 && got[len(got)-1] > b0.GetName(), fmt.Sprintf("data-b snapshots %v, first %s", got, b0.GetName())
			})
			if cur := env.Get(t, exampleAPI, "Snapshot", ns, b0.GetName()); cur != nil && cur.GetResourceVersion() != b0.GetResourceVersion() {
				t.Errorf("snapshot %s was rewritten: %v", b0.GetName(), cur.Object["spec"])
			}

			// The claim goes: the tombstone hook keeps its snapshots, none is added, and each
			// is deleted once its TTL has passed.
			tombstones := hookCalls("tombstone", l.lang)
			deleteClaim(t, a)
			var kept []string
			enginetest.Eventually(t, wait, func() (bool, string) {
				cur := env.Get(t, exampleAPI, "SnapshotSchedule", ns, "my-app")
				kept = names(snapshotsOf(t, ns)["data-a"])
				return statusCount(cur, "inputs", "persistentvolumeclaims", "total") == 1 && hookCalls("tombstone", l.lang) > tombstones,
					fmt.Sprintf("status %v", cur.Object["status"])
			})
			if len(kept) == 0 {
				t.Fatal("the deleted claim's snapshots were deleted at once, not kept until they expire")
			}
			enginetest.Eventually(t, wait, func() (bool, string) {
				left := names(snapshotsOf(t, ns)["data-a"])
				for _, n := range left {
					if !slices.Contains(kept, n) {
						t.Fatalf("snapshot %s was taken of the deleted claim", n)
					}
				}
				return len(left) == 0, fmt.Sprintf("snapshots of the deleted claim left: %v", left)
			})
			if got := snapshotsOf(t, ns)["data-b"]; len(got) == 0 {
				t.Error("the remaining claim has no snapshot")
			}
			if ev := env.Events(t, ns, "my-app"); len(ev["HookFailed"])+len(ev["InvalidHookResponse"]) > 0 {
				t.Errorf("hook failures on the schedule: %v", ev)
			}
		})
	}
}

// TestScheduleValidation: the API server refuses durations the hooks could not parse
// (time.parse_duration takes Go durations, no days), intervals under a second, and a TTL
// shorter than the interval.
func TestScheduleValidation(t *testing.T) {
	ns := env.Namespace(t)
	for _, tc := range []struct {
		interval, ttl string
		ok            bool
	}{
		{"6h", "240h", true},
		{"90m", "90m", true},
		{"10d", "240h", false},
		{"6h", "10d", false},
		{"500ms", "1h", false},
		{"6h", "1h", false},
	} {
		obj := enginetest.Object(t, fmt.Sprintf(`
apiVersion: examples.metascript.dev/v1alpha1
kind: SnapshotSchedule
metadata: {generateName: v-}
spec: {snapshotInterval: %q, snapshotTTL: %q}
`, tc.interval, tc.ttl))
		obj.SetNamespace(ns)
		_, err := env.Client(t, obj).Create(context.Background(), obj, metav1.CreateOptions{})
		if (err == nil) != tc.ok {
			t.Errorf("interval %s, TTL %s: accepted %v, want %v (%v)", tc.interval, tc.ttl, err == nil, tc.ok, err)
		}
	}
}
