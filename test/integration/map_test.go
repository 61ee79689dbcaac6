package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/test/enginetest"
)

const tombstoneHook = "tombstone: {starlark: {function: tombstone}}"

var copies = schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "copies"}

// mapController creates the MapController of testdata/map.yaml named name, on Bundles
// labelled suite=suite, with the tombstone hook when tombstone.
func mapController(t *testing.T, name, suite string, tombstone bool) *unstructured.Unstructured {
	t.Helper()
	hook := ""
	if tombstone {
		hook = tombstoneHook
	}
	return controller(t, "map.yaml", "NAME", name, "SUITE", suite, "TOMBSTONE", hook)
}

// input creates a ConfigMap labelled app=app with data.
func input(t *testing.T, ns, name, app string, data map[string]any) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app": app}},
		"data":     data,
	}})
}

func getCopy(t *testing.T, ns, name string) *unstructured.Unstructured {
	return env.Get(t, bundleAPI, "Copy", ns, name)
}

// waitCopy waits until Copy ns/name holds spec.value == want ("<absent>" waits for it to be
// gone).
func waitCopy(t *testing.T, ns, name, want string) *unstructured.Unstructured {
	t.Helper()
	var c *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		c = getCopy(t, ns, name)
		got := "<absent>"
		if c != nil && c.GetDeletionTimestamp() == nil {
			got, _, _ = unstructured.NestedString(c.Object, "spec", "value")
		}
		return got == want, fmt.Sprintf("Copy %s spec.value = %q, want %q", name, got, want)
	})
	return c
}

// mapCalls is how many map calls of controller name succeeded.
func mapCalls(name string) float64 {
	return testutil.ToFloat64(env.Engine.Metrics.HookInvocations.WithLabelValues("mapcontroller/"+name, "map", "starlark", "success"))
}

func waitStatus(t *testing.T, ns, name string, path []string, want int64) *unstructured.Unstructured {
	t.Helper()
	var b *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		b = getBundle(t, ns, name)
		n, _, _ := unstructured.NestedInt64(b.Object, append([]string{"status"}, path...)...)
		return n == want, fmt.Sprintf("status.%s = %d, want %d; status %v", strings.Join(path, "."), n, want, b.Object["status"])
	})
	return b
}

// TestMapInputsAddedChangedRemoved: outputs follow their inputs, a change to one input makes
// one map call and writes only its outputs, and the parent's status counts both.
func TestMapInputsAddedChangedRemoved(t *testing.T) {
	mapController(t, "map-basic", "map-basic", false)
	ns := env.Namespace(t)
	a := input(t, ns, "a", "m", map[string]any{"value": "1"})
	input(t, ns, "b", "m", map[string]any{"value": "2", "copies": "2"})
	input(t, ns, "other", "elsewhere", map[string]any{"value": "x"})
	bundle(t, ns, "p", "map-basic", "m")
	waitCopy(t, ns, "p-a-0", "1")
	waitCopy(t, ns, "p-b-1", "2")
	waitStatus(t, ns, "p", []string{"outputs", "copies", "total"}, 3)
	waitStatus(t, ns, "p", []string{"inputs", "configmaps", "total"}, 2)
	const ctl = "mapcontroller/map-basic"
	waitIdle(t, ctl)
	if c := getCopy(t, ns, "p-other-0"); c != nil {
		t.Fatal("an input the selector does not match was mapped")
	}
	b0 := getCopy(t, ns, "p-b-0")
	calls := mapCalls("map-basic")
	env.Patch(t, a, `{"data":{"value":"changed"}}`)
	waitCopy(t, ns, "p-a-0", "changed")
	waitIdle(t, ctl)
	if n := mapCalls("map-basic") - calls; n != 1 {
		t.Fatalf("%v map calls after one input changed, want 1", n)
	}
	if cur := getCopy(t, ns, "p-b-0"); cur.GetResourceVersion() != b0.GetResourceVersion() {
		t.Fatal("an unchanged input's output was written")
	}
	env.Delete(t, a)
	waitCopy(t, ns, "p-a-0", "<absent>")
	waitStatus(t, ns, "p", []string{"inputs", "configmaps", "total"}, 1)
}

func TestMapSelectorChange(t *testing.T) {
	mapController(t, "map-selector", "map-selector", false)
	ns := env.Namespace(t)
	input(t, ns, "a", "first", map[string]any{"value": "1"})
	input(t, ns, "b", "second", map[string]any{"value": "2"})
	p := bundle(t, ns, "p", "map-selector", "first")
	waitCopy(t, ns, "p-a-0", "1")
	env.Patch(t, p, `{"spec":{"selector":{"matchLabels":{"app":"second"}}}}`)
	waitCopy(t, ns, "p-b-0", "2")
	waitCopy(t, ns, "p-a-0", "<absent>")
}

// TestMapSameResourceInAndOut: outputs of the input resource that match the parent's own
// selector are not mapped again.
func TestMapSameResourceInAndOut(t *testing.T) {
	controller(t, "map-self.yaml")
	ns := env.Namespace(t)
	input(t, ns, "a", "self", map[string]any{"value": "1"})
	bundle(t, ns, "p", "map-self", "self")
	p := getBundle(t, ns, "p")
	waitValue(t, ns, "a-copy", "1")
	waitStatus(t, ns, "p", []string{"inputs", "configmaps", "total"}, 1)
	// A later event of the parent, reconciled, by which time the output's own event has
	// reached the engine long since: the output is still not an input.
	actedOn(t, "mapcontroller/map-self", 1, func() { env.Patch(t, p, `{"metadata":{"annotations":{"barrier":"now"}}}`) })
	if cm := configMap(t, ns, "a-copy-copy"); cm != nil {
		t.Fatal("the controller mapped its own output")
	}
	if n, _, _ := unstructured.NestedInt64(getBundle(t, ns, "p").Object, "status", "inputs", "configmaps", "total"); n != 1 {
		t.Fatalf("status.inputs.configmaps.total = %d: the controller counts its own output as an input", n)
	}
}

// TestMapTombstone: the outputs of a gone input are kept while the tombstone hook says so,
// offered again at later syncs, and deleted once it lets them go.
func TestMapTombstone(t *testing.T) {
	mapController(t, "map-tomb", "map-tomb", true)
	ns := env.Namespace(t)
	a := input(t, ns, "a", "t", map[string]any{"value": "1"})
	p := bundle(t, ns, "p", "map-tomb", "t")
	env.Patch(t, p, `{"spec":{"keepDetached":true}}`)
	waitCopy(t, ns, "p-a-0", "1")
	const ctl = "mapcontroller/map-tomb"
	tombstones := hookCalls(ctl, "tombstone", "starlark", "success")
	env.Delete(t, a)
	waitStatus(t, ns, "p", []string{"inputs", "configmaps", "total"}, 0)
	enginetest.Eventually(t, wait, func() (bool, string) {
		return hookCalls(ctl, "tombstone", "starlark", "success") > tombstones, "the tombstone hook was not called"
	})
	waitIdle(t, ctl)
	if c := getCopy(t, ns, "p-a-0"); c == nil || c.GetDeletionTimestamp() != nil {
		t.Fatal("a detached output the tombstone hook keeps was deleted")
	}
	waitStatus(t, ns, "p", []string{"outputs", "copies", "total"}, 1)
	env.Patch(t, p, `{"spec":{"keepDetached":false}}`)
	waitCopy(t, ns, "p-a-0", "<absent>")
}

// TestMapAggregatedStatus: conditions found True on outputs are counted on the parent.
func TestMapAggregatedStatus(t *testing.T) {
	mapController(t, "map-status", "map-status", false)
	ns := env.Namespace(t)
	input(t, ns, "a", "s", map[string]any{"value": "1", "copies": "3"})
	bundle(t, ns, "p", "map-status", "s")
	waitCopy(t, ns, "p-a-2", "1")
	for _, name := range []string{"p-a-0", "p-a-1"} {
		_, err := env.Dynamic.Resource(copies).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Backed","status":"False"}]}}`),
			metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
	}
	b := waitStatus(t, ns, "p", []string{"outputs", "copies", "ready"}, 2)
	if n, _, _ := unstructured.NestedInt64(b.Object, "status", "outputs", "copies", "total"); n != 3 {
		t.Fatalf("outputs total = %d, want 3", n)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(b.Object, "status", "outputs", "copies", "backed"); found {
		t.Fatalf("a condition that is False was counted: %v", b.Object["status"])
	}
	if enginetest.Condition(b, "Mapped") != "True" {
		t.Fatalf("Mapped condition: %v", b.Object["status"])
	}
}

// TestMapFailureIsolated: a map call that fails changes nothing for its input, names it in a
// Warning Event and in the Mapped condition; every other input proceeds.
func TestMapFailureIsolated(t *testing.T) {
	mapController(t, "map-fail", "map-fail", false)
	ns := env.Namespace(t)
	bad := input(t, ns, "bad", "f", map[string]any{"value": "1"})
	input(t, ns, "good", "f", map[string]any{"value": "1"})
	bundle(t, ns, "p", "map-fail", "f")
	before := waitCopy(t, ns, "p-bad-0", "1")
	waitCopy(t, ns, "p-good-0", "1")
	for _, tc := range []struct{ mode, reason, message string }{
		{"throw", "HookFailed", "input says throw"},
		{"invalid", "InvalidHookResponse", "outputs[0].apiVersion: required string"},
	} {
		env.Patch(t, bad, fmt.Sprintf(`{"data":{"fail":%q,"value":"2"}}`, tc.mode))
		input(t, ns, "new-"+tc.mode, "f", map[string]any{"value": "3"})
		waitCopy(t, ns, "p-new-"+tc.mode+"-0", "3")
		enginetest.Eventually(t, wait, func() (bool, string) {
			ev := env.Events(t, ns, "p")
			for _, m := range ev[tc.reason] {
				if strings.Contains(m, "ConfigMap "+ns+"/bad") && strings.Contains(m, tc.message) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("no %s event naming the input: %v", tc.reason, ev)
		})
		b := getBundle(t, ns, "p")
		enginetest.Eventually(t, wait, func() (bool, string) {
			b = getBundle(t, ns, "p")
			return enginetest.Condition(b, "Mapped") == "False", fmt.Sprintf("status %v", b.Object["status"])
		})
		if msg := conditionMessage(b, "Mapped"); !strings.Contains(msg, string(bad.GetUID())) || !strings.Contains(msg, tc.message) {
			t.Fatalf("Mapped message %q does not name the failed key and why", msg)
		}
		if cur := getCopy(t, ns, "p-bad-0"); cur.GetResourceVersion() != before.GetResourceVersion() {
			t.Fatalf("the failed input's output was written: %v", cur.Object["spec"])
		}
	}
	env.Patch(t, bad, `{"data":{"fail":null}}`)
	waitCopy(t, ns, "p-bad-0", "2")
	enginetest.Eventually(t, wait, func() (bool, string) {
		b := getBundle(t, ns, "p")
		return enginetest.Condition(b, "Mapped") == "True", fmt.Sprintf("status %v", b.Object["status"])
	})
}

// TestMapTwoParentsShareInputs: two parents selecting the same inputs each keep their own
// outputs.
func TestMapTwoParentsShareInputs(t *testing.T) {
	mapController(t, "map-share", "map-share", false)
	ns := env.Namespace(t)
	a := input(t, ns, "a", "shared", map[string]any{"value": "1"})
	p1 := bundle(t, ns, "p1", "map-share", "shared")
	p2 := bundle(t, ns, "p2", "map-share", "shared")
	c1, c2 := waitCopy(t, ns, "p1-a-0", "1"), waitCopy(t, ns, "p2-a-0", "1")
	if !controlledBy(c1, p1) || !controlledBy(c2, p2) {
		t.Fatalf("owners: %+v, %+v", c1.GetOwnerReferences(), c2.GetOwnerReferences())
	}
	env.Patch(t, a, `{"data":{"value":"2"}}`)
	waitCopy(t, ns, "p1-a-0", "2")
	waitCopy(t, ns, "p2-a-0", "2")
}

// TestMapNoWritesAtSteadyState: re-syncing a converged parent sends nothing; a change of its
// annotations, which a hook may read, maps every input again, and each answers the same.
func TestMapNoWritesAtSteadyState(t *testing.T) {
	mapController(t, "map-steady", "map-steady", false)
	ns := env.Namespace(t)
	for i := range 5 {
		input(t, ns, fmt.Sprintf("i%d", i), "st", map[string]any{"value": "1"})
	}
	p := bundle(t, ns, "p", "map-steady", "st")
	waitStatus(t, ns, "p", []string{"outputs", "copies", "total"}, 5)
	// The first calls saw no outputs yet (spec.seen 0): one more round settles spec.seen.
	env.Patch(t, p, `{"metadata":{"annotations":{"settle":"now"}}}`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		seen, _, _ := unstructured.NestedInt64(getCopy(t, ns, "p-i4-0").Object, "spec", "seen")
		return seen == 1, "spec.seen not settled"
	})
	const ctl = "mapcontroller/map-steady"
	waitCounts(t, "MapController", "map-steady", 1, 5)
	waitIdle(t, ctl)
	env.Requests.Reset()
	calls := mapCalls("map-steady")
	actedOn(t, ctl, 1, func() { env.Patch(t, p, `{"metadata":{"annotations":{"resync":"now"}}}`) })
	if w := env.Requests.Writes(); w != 0 {
		t.Fatalf("engine sent %d writes re-syncing a converged parent (by verb: %v, writes by resource: %v)", w, env.Requests.Counts(), env.Requests.WritesByResource())
	}
	// An annotation is what a hook may read of the parent: every input is mapped again, and
	// answers the same.
	if n := mapCalls("map-steady") - calls; n != 5 {
		t.Fatalf("%v map calls after the parent's metadata changed, want 5", n)
	}
}

// TestMapControllerEditRemaps: editing the map hook maps every input again; the controller's
// status counts parents and outputs.
func TestMapControllerEditRemaps(t *testing.T) {
	mc := mapController(t, "map-edit", "map-edit", false)
	ns := env.Namespace(t)
	input(t, ns, "a", "e", map[string]any{"value": "1"})
	input(t, ns, "b", "e", map[string]any{"value": "2"})
	bundle(t, ns, "p", "map-edit", "e")
	waitCopy(t, ns, "p-b-0", "2")
	editControllerOf(t, "MapController", mc.GetName(), func(cur *unstructured.Unstructured) {
		src, _, _ := unstructured.NestedString(cur.Object, "spec", "script", "starlark", "source")
		edited := strings.Replace(src, `spec = {"value": data.get("value", "")`, `spec = {"value": "v2-" + data.get("value", "")`, 1)
		if edited == src {
			t.Fatal("test fixture changed: replacement did not apply")
		}
		if err := unstructured.SetNestedField(cur.Object, edited, "spec", "script", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
	})
	waitCopy(t, ns, "p-a-0", "v2-1")
	waitCopy(t, ns, "p-b-0", "v2-2")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "MapController", "", mc.GetName())
		p, _, _ := unstructured.NestedInt64(cur.Object, "status", "parents")
		c, _, _ := unstructured.NestedInt64(cur.Object, "status", "children")
		return p == 1 && c == 2 && enginetest.Condition(cur, "Ready") == "True", fmt.Sprintf("status %v", cur.Object["status"])
	})
}

// TestMapResyncPeriod: with nothing changing, resyncPeriodSeconds alone maps the inputs again
// and again.
func TestMapResyncPeriod(t *testing.T) {
	mc := mapController(t, "map-resync", "map-resync", false)
	editControllerOf(t, "MapController", mc.GetName(), func(cur *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(cur.Object, int64(1), "spec", "resyncPeriodSeconds"); err != nil {
			t.Fatal(err)
		}
	})
	ns := env.Namespace(t)
	input(t, ns, "a", "r", map[string]any{"value": "1"})
	bundle(t, ns, "p", "map-resync", "r")
	waitCopy(t, ns, "p-a-0", "1")
	// The first call saw no output yet (spec.seen 0); the next one, which only the resync
	// brings, settles it.
	enginetest.Eventually(t, wait, func() (bool, string) {
		seen, _, _ := unstructured.NestedInt64(getCopy(t, ns, "p-a-0").Object, "spec", "seen")
		return seen == 1, "spec.seen not settled"
	})
	waitIdle(t, "mapcontroller/map-resync")
	env.Requests.Reset()
	before := mapCalls("map-resync")
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := mapCalls("map-resync") - before
		return n >= 2, fmt.Sprintf("%v map calls since the parent converged, want 2", n)
	})
	// Nothing was written to the parent, its input or its output, so no event of theirs made
	// those calls.
	if w := env.Requests.WritesByResource(); w["bundles"]+w["bundles/status"]+w["configmaps"]+w["copies"] != 0 {
		t.Fatalf("engine wrote meanwhile: %v", w)
	}
}

// TestMapCompileErrorReported: a compile error is located on the controller's status and no
// parent is touched.
func TestMapCompileErrorReported(t *testing.T) {
	const ctl = "mapcontroller/map-broken"
	added, _, _ := queueCounts(t, ctl)
	mc := controller(t, "map.yaml", "NAME", "map-broken", "SUITE", "map-broken", "TOMBSTONE", "",
		`return {"outputs": [{`, `return {"outputs": [{,`)
	ns := env.Namespace(t)
	input(t, ns, "a", "c", map[string]any{"value": "1"})
	b := bundle(t, ns, "p", "map-broken", "c")
	var cur *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur = env.Get(t, "metascript.dev/v1alpha1", "MapController", "", mc.GetName())
		return enginetest.Condition(cur, "HooksCompiled") == "False", fmt.Sprintf("status %v", cur.Object["status"])
	})
	if msg := conditionMessage(cur, "HooksCompiled"); !strings.Contains(msg, "mapcontroller/map-broken/script:") || !strings.Contains(msg, "hooks.map") {
		t.Fatalf("HooksCompiled message %q does not locate the error", msg)
	}
	// The manager has handled it, and counts it as failed: no runner, so no work queue.
	waitManagerSettled(t)
	if now, _, _ := queueCounts(t, ctl); now != added {
		t.Fatalf("%v parents queued for a controller that does not compile", now-added)
	}
	if got := getBundle(t, ns, "p"); got.GetResourceVersion() != b.GetResourceVersion() {
		t.Fatalf("parent touched by a controller that does not compile: %v", got.Object)
	}
}

// mapKey is the map key an output was made for.
func mapKey(o *unstructured.Unstructured) string { return o.GetLabels()["metascript.dev/map-key"] }

// TestMapInputRecreated: an input deleted and created again under its name has a new UID,
// hence a new map key: the old key's output is deleted (there is no tombstone hook) and the
// new key's is made, carrying the new key.
func TestMapInputRecreated(t *testing.T) {
	mapController(t, "map-recreate", "map-recreate", false)
	ns := env.Namespace(t)
	old := input(t, ns, "a", "re", map[string]any{"value": "1"})
	bundle(t, ns, "p", "map-recreate", "re")
	first := waitCopy(t, ns, "p-a-0", "1")
	if mapKey(first) != string(old.GetUID()) {
		t.Fatalf("output's map key %q, want the input's UID %s", mapKey(first), old.GetUID())
	}
	env.Delete(t, old)
	recreated := input(t, ns, "a", "re", map[string]any{"value": "2"})
	enginetest.Eventually(t, wait, func() (bool, string) {
		c := getCopy(t, ns, "p-a-0")
		if c == nil || c.GetDeletionTimestamp() != nil {
			return false, "no output"
		}
		v, _, _ := unstructured.NestedString(c.Object, "spec", "value")
		return mapKey(c) == string(recreated.GetUID()) && v == "2" && c.GetUID() != first.GetUID(),
			fmt.Sprintf("output UID %s (first %s), map key %s (new input %s), spec.value %q",
				c.GetUID(), first.GetUID(), mapKey(c), recreated.GetUID(), v)
	})
	waitStatus(t, ns, "p", []string{"outputs", "copies", "total"}, 1)
	waitStatus(t, ns, "p", []string{"inputs", "configmaps", "total"}, 1)
}

// TestMapOutputEditedBySomeoneElse: an output another writer changed calls the map hook for
// its input again, once, and its answer puts the output back; the other inputs are not
// mapped again and their outputs not written.
func TestMapOutputEditedBySomeoneElse(t *testing.T) {
	mapController(t, "map-edited", "map-edited", false)
	const ctl = "mapcontroller/map-edited"
	ns := env.Namespace(t)
	input(t, ns, "a", "ed", map[string]any{"value": "1"})
	input(t, ns, "b", "ed", map[string]any{"value": "2"})
	bundle(t, ns, "p", "map-edited", "ed")
	waitCopy(t, ns, "p-a-0", "1")
	b0 := waitCopy(t, ns, "p-b-0", "2")
	waitIdle(t, ctl)
	calls := mapCalls("map-edited")
	_, err := env.Dynamic.Resource(copies).Namespace(ns).Patch(t.Context(), "p-a-0", types.MergePatchType,
		[]byte(`{"spec":{"value":"tampered"}}`), metav1.PatchOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	waitCopy(t, ns, "p-a-0", "1")
	waitIdle(t, ctl)
	if n := mapCalls("map-edited") - calls; n != 1 {
		t.Fatalf("%v map calls after one output was edited, want 1", n)
	}
	if cur := getCopy(t, ns, "p-b-0"); cur.GetResourceVersion() != b0.GetResourceVersion() {
		t.Fatal("the output of an input whose outputs nobody edited was written")
	}
}

// TestMapTombstoneFailureKeepsOutputs: a tombstone call that fails keeps the detached key's
// outputs as they are and says why in a Warning Event; once the hook answers, the outputs it
// does not keep are deleted.
func TestMapTombstoneFailureKeepsOutputs(t *testing.T) {
	mapController(t, "map-tomb-fail", "map-tomb-fail", true)
	const ctl = "mapcontroller/map-tomb-fail"
	ns := env.Namespace(t)
	a := input(t, ns, "a", "tf", map[string]any{"value": "1"})
	// keepDetached is false: but for the failure, the tombstone hook would let the output go.
	p := bundle(t, ns, "p", "map-tomb-fail", "tf")
	env.Patch(t, p, `{"spec":{"tombstoneFails":true}}`)
	waitCopy(t, ns, "p-a-0", "1")
	waitIdle(t, ctl)
	kept := getCopy(t, ns, "p-a-0")
	failed := hookCalls(ctl, "tombstone", "starlark", "error")
	env.Delete(t, a)
	enginetest.Eventually(t, wait, func() (bool, string) {
		return hookCalls(ctl, "tombstone", "starlark", "error") > failed, "no failed tombstone call yet"
	})
	waitIdle(t, ctl) // the reconcile that made the call is done, and its retries wait their backoff
	env.WaitEvent(t, wait, ns, "p", "HookFailed", "tombstone says no")
	if c := getCopy(t, ns, "p-a-0"); c == nil || c.GetDeletionTimestamp() != nil || c.GetResourceVersion() != kept.GetResourceVersion() {
		t.Fatalf("a failed tombstone call changed its key's output: %v", c)
	}
	env.Patch(t, p, `{"spec":{"tombstoneFails":null}}`)
	waitCopy(t, ns, "p-a-0", "<absent>")
}

// TestMapOutputWriteRefused: an output the API server refuses shows on the parent as a
// WriteFailed Warning Event and Synced=False naming it; the other inputs' outputs are
// written, and Synced turns True once the input no longer asks for it.
func TestMapOutputWriteRefused(t *testing.T) {
	mapController(t, "map-refused", "map-refused", false)
	ns := env.Namespace(t)
	bad := input(t, ns, "bad", "rf", map[string]any{"value": "1", "fail": "refused"})
	input(t, ns, "good", "rf", map[string]any{"value": "1"})
	bundle(t, ns, "p", "map-refused", "rf")
	waitCopy(t, ns, "p-good-0", "1")
	var got *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		got = getBundle(t, ns, "p")
		return enginetest.Condition(got, "Synced") == "False", fmt.Sprintf("status %v", got.Object["status"])
	})
	if msg := conditionMessage(got, "Synced"); !strings.Contains(msg, "Copy "+ns+"/p-bad-0") || !strings.Contains(msg, "spec") {
		t.Fatalf("Synced message %q does not name the output and the server's message", msg)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		ev := env.Events(t, ns, "p")
		for _, m := range ev["WriteFailed"] {
			if strings.Contains(m, "p-bad-0") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no WriteFailed event naming the output; events %v", ev)
	})
	if c := getCopy(t, ns, "p-bad-0"); c != nil {
		t.Fatalf("a refused output exists: %v", c.Object)
	}
	env.Patch(t, bad, `{"data":{"fail":null}}`)
	waitCopy(t, ns, "p-bad-0", "1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		got = getBundle(t, ns, "p")
		return enginetest.Condition(got, "Synced") == "True", fmt.Sprintf("status %v", got.Object["status"])
	})
}
