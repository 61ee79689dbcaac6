package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/test/enginetest"
)

const decorateAnnotation = "test.metascript.dev/decorate"

// decorator creates the steerable decorator of testdata/decorator.yaml named name, on Bundles
// labelled suite=suite, updating attachments by method.
func decorator(t *testing.T, name, suite, method string) *unstructured.Unstructured {
	t.Helper()
	return controller(t, "decorator.yaml", "NAME", name, "SUITE", suite, "METHOD", method)
}

// target creates a Bundle labelled suite=suite (and user=keep), annotated for decoration
// unless plain, with spec as the decorators' configuration.
func target(t *testing.T, ns, name, suite string, annotated bool, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	md := map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": suite, "user": "keep"}}
	if annotated {
		md["annotations"] = map[string]any{decorateAnnotation: "yes"}
	}
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle", "metadata": md, "spec": spec,
	}})
}

// steer replaces the configuration of decorator name on a target (a JSON patch: a merge
// patch would merge the old configuration's keys into the new one).
func steer(t *testing.T, obj *unstructured.Unstructured, name string, cfg map[string]any) {
	t.Helper()
	patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/" + name, "value": cfg}})
	if _, err := env.Client(t, obj).Patch(context.Background(), obj.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("steering %s: %v", obj.GetName(), err)
	}
}

// attachmentOf reports whether obj is controlled by owner and marked as decorator's
// attachment.
func attachmentOf(obj, owner *unstructured.Unstructured, decorator string) bool {
	return controlledBy(obj, owner) && obj.GetAnnotations()["metascript.dev/decorator-controller"] == decorator
}

func waitBundle(t *testing.T, ns, name, what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var b *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		b = getBundle(t, ns, name)
		return b != nil && cond(b), fmt.Sprintf("%s: bundle %s is %v", what, name, b)
	})
	return b
}

func TestDecoratorSelectsByLabelAndAnnotation(t *testing.T) {
	decorator(t, "deco-sel", "deco-sel", "InPlace")
	ns := env.Namespace(t)
	cfg := map[string]any{"deco-sel": map[string]any{"labels": map[string]any{"decorated": "yes"},
		"attachments": []any{map[string]any{"name": "a", "value": "1"}}}}
	plain := target(t, ns, "plain", "deco-sel", false, cfg)
	other := target(t, ns, "other", "elsewhere", true, cfg)
	chosen := target(t, ns, "chosen", "deco-sel", true, cfg)
	waitBundle(t, ns, "chosen", "decorated", func(b *unstructured.Unstructured) bool { return b.GetLabels()["decorated"] == "yes" })
	cm := waitValue(t, ns, "deco-sel-a", "1")
	if !controlledBy(cm, chosen) || cm.GetAnnotations()["metascript.dev/decorator-controller"] != "deco-sel" {
		t.Fatalf("attachment owners %+v, annotations %v", cm.GetOwnerReferences(), cm.GetAnnotations())
	}
	// The two others were created first, on the same watch: the engine saw them before it
	// decorated chosen, and whatever it queued for them is done once its queue is idle.
	waitIdle(t, "decoratorcontroller/deco-sel")
	for _, b := range []*unstructured.Unstructured{plain, other} {
		if cur := getBundle(t, ns, b.GetName()); cur.GetResourceVersion() != b.GetResourceVersion() {
			t.Fatalf("%s is not selected but was written: %v", b.GetName(), cur.Object["metadata"])
		}
	}
	// Annotating the plain one selects it.
	env.Patch(t, plain, fmt.Sprintf(`{"metadata":{"annotations":{%q:"now"}}}`, decorateAnnotation))
	waitBundle(t, ns, "plain", "decorated once annotated", func(b *unstructured.Unstructured) bool { return b.GetLabels()["decorated"] == "yes" })
}

// TestDecoratorOwnsOnlyItsKeys: labels, annotations and status fields the decorator set are
// changed and removed when it stops returning them; keys and fields set by others stay,
// unless the hook returns them as null.
func TestDecoratorOwnsOnlyItsKeys(t *testing.T) {
	decorator(t, "deco-keys", "deco-keys", "InPlace")
	ns := env.Namespace(t)
	b := target(t, ns, "k", "deco-keys", true, map[string]any{"deco-keys": map[string]any{
		"labels": map[string]any{"a": "1", "b": "2"}, "annotations": map[string]any{"note": "free text, spaces"},
		"status": map[string]any{"decorated": true}}})
	// Someone else owns a status field.
	_, err := env.Client(t, b).Patch(context.Background(), "k", types.MergePatchType,
		[]byte(`{"status":{"external":"theirs"}}`), metav1.PatchOptions{FieldManager: "someone-else"}, "status")
	if err != nil {
		t.Fatal(err)
	}
	waitBundle(t, ns, "k", "labels, annotation and status set", func(b *unstructured.Unstructured) bool {
		s, _, _ := unstructured.NestedMap(b.Object, "status")
		return b.GetLabels()["a"] == "1" && b.GetLabels()["b"] == "2" && b.GetAnnotations()["note"] == "free text, spaces" &&
			s["decorated"] == true && s["external"] == "theirs" && s["seen"] == int64(0)
	})
	steer(t, b, "deco-keys", map[string]any{"labels": map[string]any{"a": "1"}, "status": map[string]any{"other": int64(1)}})
	got := waitBundle(t, ns, "k", "b, note and status.decorated removed", func(b *unstructured.Unstructured) bool {
		s, _, _ := unstructured.NestedMap(b.Object, "status")
		_, hasB := b.GetLabels()["b"]
		_, hasNote := b.GetAnnotations()["note"]
		_, hasDecorated := s["decorated"]
		return !hasB && !hasNote && !hasDecorated && s["other"] == int64(1)
	})
	if got.GetLabels()["user"] != "keep" || got.GetLabels()["suite"] != "deco-keys" || got.GetAnnotations()[decorateAnnotation] != "yes" {
		t.Fatalf("another manager's keys were touched: labels %v annotations %v", got.GetLabels(), got.GetAnnotations())
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "external"); s != "theirs" {
		t.Fatalf("another manager's status field was touched: %v", got.Object["status"])
	}
	// A null removes a key whoever set it; no status in the response leaves it alone.
	steer(t, b, "deco-keys", map[string]any{"labels": map[string]any{"a": "1"}, "remove": []any{"user"}})
	got = waitBundle(t, ns, "k", "user label removed", func(b *unstructured.Unstructured) bool {
		_, has := b.GetLabels()["user"]
		return !has
	})
	if s, _, _ := unstructured.NestedInt64(got.Object, "status", "other"); s != 1 {
		t.Fatalf("status changed although the hook returned none: %v", got.Object["status"])
	}
}

func TestDecoratorAttachmentUpdateMethods(t *testing.T) {
	for _, tc := range []struct {
		method               string
		wantUpdated, wantNew bool
	}{
		{method: "OnDelete"},
		{method: "Recreate", wantUpdated: true, wantNew: true},
		{method: "InPlace", wantUpdated: true},
	} {
		t.Run(tc.method, func(t *testing.T) {
			name := "deco-" + strings.ToLower(tc.method)
			decorator(t, name, name, tc.method)
			ns := env.Namespace(t)
			attach := func(items ...string) map[string]any {
				list := []any{}
				for _, it := range items {
					k, v, _ := strings.Cut(it, "=")
					list = append(list, map[string]any{"name": k, "value": v})
				}
				return map[string]any{"attachments": list}
			}
			b := target(t, ns, "m", name, true, map[string]any{name: attach("a=1", "b=1")})
			first := waitValue(t, ns, name+"-a", "1")
			waitValue(t, ns, name+"-b", "1")
			steer(t, b, name, attach("a=2"))
			waitGone(t, ns, name+"-b") // no longer returned: deleted, whatever the method
			if !tc.wantUpdated {
				// The reconcile that deleted b has seen a=2; once it is done, a is as it left it.
				waitIdle(t, "decoratorcontroller/"+name)
				if v := value(configMap(t, ns, name+"-a")); v != "1" {
					t.Fatalf("OnDelete updated an existing attachment: value %q", v)
				}
				env.Delete(t, first)
				if second := waitValue(t, ns, name+"-a", "2"); second.GetUID() == first.GetUID() {
					t.Fatal("attachment not recreated after deletion")
				}
				return
			}
			second := waitValue(t, ns, name+"-a", "2")
			if replaced := second.GetUID() != first.GetUID(); replaced != tc.wantNew {
				t.Fatalf("attachment replaced = %v, want %v", replaced, tc.wantNew)
			}
		})
	}
}

// TestTwoDecoratorsOnOneTarget: each decorator sees and changes only its own attachments and
// keys; a name one already uses is a conflict for the other, reported and left alone.
// (status.seen counts the attachments deco-one's hook is shown: 1, never deco-two's.)
func TestTwoDecoratorsOnOneTarget(t *testing.T) {
	decorator(t, "deco-one", "deco-two", "InPlace")
	decorator(t, "deco-two", "deco-two", "InPlace")
	ns := env.Namespace(t)
	b := target(t, ns, "both", "deco-two", true, map[string]any{
		"deco-one": map[string]any{"labels": map[string]any{"one": "1"}, "attachments": []any{map[string]any{"name": "x", "value": "1"}},
			"status": map[string]any{}},
		"deco-two": map[string]any{"labels": map[string]any{"two": "2"}, "attachments": []any{map[string]any{"name": "y", "value": "2"}}},
	})
	one := waitValue(t, ns, "deco-one-x", "1")
	waitValue(t, ns, "deco-two-y", "2")
	waitBundle(t, ns, "both", "both labels", func(b *unstructured.Unstructured) bool {
		seen, _, _ := unstructured.NestedInt64(b.Object, "status", "seen")
		return b.GetLabels()["one"] == "1" && b.GetLabels()["two"] == "2" && seen == 1
	})
	// deco-two asks for an attachment under the name of deco-one's: a conflict, reported on
	// the target and left alone; its own attachment is still kept.
	steer(t, b, "deco-two", map[string]any{"labels": map[string]any{"two": "2"},
		"attachments": []any{map[string]any{"name": "y", "value": "2"}},
		"exact":       []any{map[string]any{"name": "deco-one-x", "value": "taken"}}})
	env.WaitEvent(t, wait, ns, "both", "ChildConflict", "deco-one-x")
	waitIdle(t, "decoratorcontroller/deco-two")
	if cm := configMap(t, ns, "deco-one-x"); cm.GetResourceVersion() != one.GetResourceVersion() || !attachmentOf(cm, b, "deco-one") {
		t.Fatalf("deco-one's attachment was taken or changed by deco-two: %v", cm.Object)
	}
	waitValue(t, ns, "deco-two-y", "2")
	// deco-two drops its attachment and label: deco-one's stay untouched.
	steer(t, b, "deco-two", map[string]any{})
	waitGone(t, ns, "deco-two-y")
	waitBundle(t, ns, "both", "label two removed", func(b *unstructured.Unstructured) bool {
		_, has := b.GetLabels()["two"]
		return !has && b.GetLabels()["one"] == "1"
	})
	if cm := configMap(t, ns, "deco-one-x"); cm.GetResourceVersion() != one.GetResourceVersion() {
		t.Fatalf("deco-one's attachment changed: %v", cm.Object)
	}
}

// TestDecoratorFinalize: a finalize hook tears the attachments down before the target goes,
// and when a target stops matching, until it answers finalized; after that the target is left
// alone.
func TestDecoratorFinalize(t *testing.T) {
	seen := witness(t, "deco-fin")
	decorator(t, "deco-fin", "deco-fin", "InPlace")
	ns := env.Namespace(t)
	attach := func(name string) map[string]any {
		return map[string]any{"deco-fin": map[string]any{"attachments": []any{map[string]any{"name": name, "value": "1"}}}}
	}
	gone := target(t, ns, "gone", "deco-fin", true, attach("g"))
	optout := witnessed(t, target(t, ns, "optout", "deco-fin", true, attach("a")), "deco-fin")
	for _, n := range []string{"gone", "optout"} {
		waitBundle(t, ns, n, "finalizer added", func(b *unstructured.Unstructured) bool { return len(b.GetFinalizers()) == 1 })
	}
	waitValue(t, ns, "deco-fin-g", "1")
	waitValue(t, ns, "deco-fin-a", "1")
	env.Delete(t, gone)
	waitGone(t, ns, "deco-fin-g") // torn down by finalize: there is no garbage collector here
	enginetest.Eventually(t, wait, func() (bool, string) {
		return getBundle(t, ns, "gone") == nil, "deleted target still exists"
	})
	// Opting out: the annotation goes; finalize removes the attachment and the finalizer.
	env.Patch(t, optout, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, decorateAnnotation))
	waitGone(t, ns, "deco-fin-a")
	after := waitBundle(t, ns, "optout", "finalizer removed", func(b *unstructured.Unstructured) bool {
		return len(b.GetFinalizers()) == 0 && b.GetLabels()["deco-fin-finalized"] == "yes"
	})
	// The witness reconciles the steer: it reached the engine; deco-fin has done whatever it
	// did about it once its queue is idle.
	actedOn(t, seen, 1, func() { steer(t, optout, "deco-fin", map[string]any{"labels": map[string]any{"late": "x"}}) })
	waitIdle(t, "decoratorcontroller/deco-fin")
	if cur := getBundle(t, ns, "optout"); cur.GetLabels()["late"] != "" || len(cur.GetFinalizers()) != 0 {
		t.Fatalf("a target that opted out was decorated again: labels %v finalizers %v (before: %v)",
			cur.GetLabels(), cur.GetFinalizers(), after.GetLabels())
	}
}

func TestDecoratorHookFailuresChangeNothing(t *testing.T) {
	decorator(t, "deco-modes", "deco-modes", "InPlace")
	for _, tc := range []struct{ mode, reason, message string }{
		{"throw", "HookFailed", "mode is throw"},
		{"loop", "HookBudgetExceeded", "budget"},
		{"badlabel", "InvalidHookResponse", "labels.a: expected a string or null, got int"},
		{"undeclared", "InvalidHookResponse", "attachments[1]"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ns := env.Namespace(t)
			good := map[string]any{"labels": map[string]any{"v": "1"}, "status": map[string]any{"v": "1"},
				"attachments": []any{map[string]any{"name": "a", "value": "1"}, map[string]any{"name": "b", "value": "1"}}}
			b := target(t, ns, "f", "deco-modes", true, map[string]any{"deco-modes": good})
			waitValue(t, ns, "deco-modes-b", "1")
			before := waitBundle(t, ns, "f", "converged", func(b *unstructured.Unstructured) bool {
				seen, _, _ := unstructured.NestedInt64(b.Object, "status", "seen")
				return b.GetLabels()["v"] == "1" && seen == 2
			})
			a := configMap(t, ns, "deco-modes-a")
			failedAfter(t, "decoratorcontroller/deco-modes", func() {
				steer(t, b, "deco-modes", map[string]any{"mode": tc.mode, "labels": map[string]any{"v": "2"}, "status": map[string]any{"v": "2"},
					"attachments": []any{map[string]any{"name": "a", "value": "2"}}})
			})
			enginetest.Eventually(t, wait, func() (bool, string) {
				ev := env.Events(t, ns, "f")
				for _, m := range ev[tc.reason] {
					if strings.Contains(m, tc.message) {
						return true, ""
					}
				}
				return false, fmt.Sprintf("no %s event containing %q; events: %v", tc.reason, tc.message, ev)
			})
			if cm := configMap(t, ns, "deco-modes-a"); cm.GetResourceVersion() != a.GetResourceVersion() {
				t.Fatalf("attachment changed after a failed hook: %v", cm.Object["data"])
			}
			if cm := configMap(t, ns, "deco-modes-b"); cm == nil || cm.GetDeletionTimestamp() != nil {
				t.Fatal("attachment deleted after a failed hook")
			}
			after := getBundle(t, ns, "f")
			if after.GetLabels()["v"] != "1" || fmt.Sprint(after.Object["status"]) != fmt.Sprint(before.Object["status"]) {
				t.Fatalf("target changed after a failed hook: labels %v status %v", after.GetLabels(), after.Object["status"])
			}
			steer(t, b, "deco-modes", map[string]any{"labels": map[string]any{"v": "2"},
				"attachments": []any{map[string]any{"name": "a", "value": "2"}}})
			waitValue(t, ns, "deco-modes-a", "2")
			waitGone(t, ns, "deco-modes-b")
		})
	}
}

// TestDecoratorWriteRefusedIsReported: an attachment the API server refuses (a number in a
// ConfigMap's data) shows on the target as a Warning Event and Synced=False naming it; the
// other writes still happen, and Synced turns True once the hook is fixed.
func TestDecoratorWriteRefusedIsReported(t *testing.T) {
	decorator(t, "deco-refused", "deco-refused", "InPlace")
	ns := env.Namespace(t)
	b := target(t, ns, "r", "deco-refused", true, map[string]any{"deco-refused": map[string]any{"mode": "refused",
		"labels": map[string]any{"set": "yes"}, "attachments": []any{map[string]any{"name": "a", "value": "1"}}}})
	got := waitBundle(t, ns, "r", "Synced=False", func(b *unstructured.Unstructured) bool {
		return enginetest.Condition(b, "Synced") == "False"
	})
	msg := conditionMessage(got, "Synced")
	if !strings.Contains(msg, "ConfigMap "+ns+"/deco-refused-a") || !refusedAsNotAString(msg) {
		t.Fatalf("Synced message %q does not name the object and the server's message", msg)
	}
	if got.GetLabels()["set"] != "yes" {
		t.Fatalf("the target's own write did not happen: labels %v", got.GetLabels())
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		ev := env.Events(t, ns, "r")
		return len(ev["WriteFailed"]) > 0, fmt.Sprintf("events %v", ev)
	})
	steer(t, b, "deco-refused", map[string]any{"attachments": []any{map[string]any{"name": "a", "value": "1"}}})
	waitValue(t, ns, "deco-refused-a", "1")
	waitBundle(t, ns, "r", "Synced=True", func(b *unstructured.Unstructured) bool {
		return enginetest.Condition(b, "Synced") == "True"
	})
}

// TestClusterScopedTargetWithNamespacedAttachments: an attachment in a namespace, owned by a
// cluster-scoped target, comes back when deleted.
func TestClusterScopedTargetWithNamespacedAttachments(t *testing.T) {
	controller(t, "cluster-decorator.yaml")
	ns := env.Namespace(t)
	p := env.Create(t, "", enginetest.Object(t, fmt.Sprintf(`
apiVersion: test.metascript.dev/v1
kind: ClusterBundle
metadata: {name: cd-%s, labels: {suite: cluster-decorator}}
spec: {namespace: %s}`, ns, ns)))
	t.Cleanup(func() { env.Delete(t, p) })
	cm := waitValue(t, ns, "attached", p.GetName())
	if !controlledBy(cm, p) {
		t.Fatalf("attachment not controlled by the ClusterBundle: %+v", cm.GetOwnerReferences())
	}
	env.Delete(t, cm)
	enginetest.Eventually(t, wait, func() (bool, string) {
		again := configMap(t, ns, "attached")
		return again != nil && again.GetUID() != cm.GetUID() && again.GetDeletionTimestamp() == nil, "attachment not recreated"
	})
}

// TestDecoratorNoWritesAtSteadyState: re-syncing converged targets sends nothing.
func TestDecoratorNoWritesAtSteadyState(t *testing.T) {
	decorator(t, "deco-steady", "deco-steady", "InPlace")
	ns := env.Namespace(t)
	var targets []*unstructured.Unstructured
	for i := range 3 {
		targets = append(targets, target(t, ns, fmt.Sprintf("s%d", i), "deco-steady", true, map[string]any{"deco-steady": map[string]any{
			"labels": map[string]any{"l": "v"}, "annotations": map[string]any{"a": "v"}, "status": map[string]any{"s": "v"},
			"attachments": []any{map[string]any{"name": fmt.Sprintf("a%d", i), "value": "1"}}}}))
	}
	for i := range targets {
		waitValue(t, ns, fmt.Sprintf("deco-steady-a%d", i), "1")
		waitBundle(t, ns, fmt.Sprintf("s%d", i), "converged", func(b *unstructured.Unstructured) bool {
			seen, _, _ := unstructured.NestedInt64(b.Object, "status", "seen")
			return seen == 1 && b.GetLabels()["l"] == "v"
		})
	}
	const ctl = "decoratorcontroller/deco-steady"
	waitCounts(t, "DecoratorController", "deco-steady", 3, 3)
	waitIdle(t, ctl)
	env.Requests.Reset()
	actedOn(t, ctl, len(targets), func() {
		for _, b := range targets {
			env.Patch(t, b, `{"metadata":{"labels":{"resync":"now"}}}`)
		}
	})
	if w := env.Requests.Writes(); w != 0 {
		t.Fatalf("engine sent %d writes re-syncing converged targets (by verb: %v, writes by resource: %v)", w, env.Requests.Counts(), env.Requests.WritesByResource())
	}
}

// TestMetacontrollerDecoratorWithWebhook: a Metacontroller DecoratorController whose only
// change is its apiVersion runs its webhook with Metacontroller's request and response.
func TestMetacontrollerDecoratorWithWebhook(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Controller struct {
				Kind string `json:"kind"`
			} `json:"controller"`
			Object struct {
				Metadata struct {
					Name        string            `json:"name"`
					Namespace   string            `json:"namespace"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
			Attachments map[string]map[string]any `json:"attachments"`
			Finalizing  *bool                     `json:"finalizing"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Controller.Kind != "DecoratorController" ||
			req.Finalizing == nil || req.Attachments["ConfigMap.v1"] == nil {
			http.Error(w, fmt.Sprintf("unexpected request (%v): %+v", err, req), http.StatusBadRequest)
			return
		}
		md := req.Object.Metadata
		json.NewEncoder(w).Encode(map[string]any{
			"labels": map[string]any{"config-per-bundle": "attached"},
			"attachments": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": md.Name + "-config"},
				"data":     map[string]any{"value": md.Annotations["config-per-bundle"]},
			}},
			"status": map[string]any{"attachments": len(req.Attachments["ConfigMap.v1"])},
		})
	}))
	defer srv.Close()
	controller(t, "metacontroller-decorator.yaml", "WEBHOOK_URL", srv.URL)
	ns := env.Namespace(t)
	b := env.Create(t, ns, enginetest.Object(t, `
apiVersion: test.metascript.dev/v1
kind: Bundle
metadata: {name: mc, annotations: {config-per-bundle: "v1"}}
spec: {}`))
	waitValue(t, ns, "mc-config", "v1")
	env.Patch(t, b, `{"metadata":{"annotations":{"config-per-bundle":"v2"}}}`)
	waitValue(t, ns, "mc-config", "v2")
	waitBundle(t, ns, "mc", "label and status", func(b *unstructured.Unstructured) bool {
		n, _, _ := unstructured.NestedInt64(b.Object, "status", "attachments")
		return b.GetLabels()["config-per-bundle"] == "attached" && n == 1
	})
	if calls.Load() == 0 {
		t.Fatal("the webhook was never called")
	}
}

// TestDecoratorResyncPeriod: a converged target whose hook changes nothing, so that no event
// brings it back, is synced again and again: resyncPeriodSeconds alone brings it back.
func TestDecoratorResyncPeriod(t *testing.T) {
	controller(t, "decorator-resync.yaml")
	const ctl = "decoratorcontroller/decorator-resync"
	ns := env.Namespace(t)
	target(t, ns, "r", "decorator-resync", false, map[string]any{})
	enginetest.Eventually(t, wait, func() (bool, string) { return reconciles(ctl, "success") >= 1, "never synced" })
	waitIdle(t, ctl)
	env.Requests.Reset()
	before := reconciles(ctl, "success")
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := reconciles(ctl, "success") - before
		return n >= 2, fmt.Sprintf("%v syncs since the target converged, want 2", n)
	})
	// Nothing was written to the target, so no event of it brought it back.
	if w := env.Requests.WritesByResource(); w["bundles"]+w["bundles/status"] != 0 {
		t.Fatalf("engine wrote Bundles meanwhile: %v", w)
	}
}

// TestDecoratorSyntaxErrorReported: a compile error is located on the controller's status
// before any target is touched.
func TestDecoratorSyntaxErrorReported(t *testing.T) {
	const ctl = "decoratorcontroller/decorator-syntax-error"
	added, _, _ := queueCounts(t, ctl)
	dc := controller(t, "decorator-syntax-error.yaml")
	ns := env.Namespace(t)
	b := target(t, ns, "s", "decorator-syntax", false, map[string]any{})
	var cur *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur = env.Get(t, "metascript.dev/v1alpha1", "DecoratorController", "", dc.GetName())
		return enginetest.Condition(cur, "HooksCompiled") == "False" && enginetest.Condition(cur, "Ready") == "False",
			fmt.Sprintf("status %v", cur.Object["status"])
	})
	if msg := conditionMessage(cur, "HooksCompiled"); !strings.Contains(msg, "decoratorcontroller/decorator-syntax-error/hooks/sync:3:") {
		t.Fatalf("HooksCompiled message %q does not locate the error (hook and line 3)", msg)
	}
	// The manager has handled it, and counts it as failed: no runner, so no work queue.
	waitManagerSettled(t)
	if now, _, _ := queueCounts(t, ctl); now != added {
		t.Fatalf("%v targets queued for a decorator that does not compile", now-added)
	}
	if got := getBundle(t, ns, "s"); got.GetResourceVersion() != b.GetResourceVersion() {
		t.Fatalf("target touched by a decorator that does not compile: %v", got.Object)
	}
}

// TestDecoratorEditResyncs: editing a decorator's hook recompiles it and syncs every target
// again; counts appear on its status.
func TestDecoratorEditResyncs(t *testing.T) {
	dc := decorator(t, "deco-edit", "deco-edit", "InPlace")
	ns := env.Namespace(t)
	target(t, ns, "e", "deco-edit", true, map[string]any{"deco-edit": map[string]any{
		"attachments": []any{map[string]any{"name": "a", "value": "1"}}}})
	waitValue(t, ns, "deco-edit-a", "1")
	editControllerOf(t, "DecoratorController", dc.GetName(), func(cur *unstructured.Unstructured) {
		src, _, _ := unstructured.NestedString(cur.Object, "spec", "script", "starlark", "source")
		edited := strings.Replace(src, `"data": {"value": value}`, `"data": {"value": "v2-" + value}`, 1)
		if edited == src {
			t.Fatal("test fixture changed: replacement did not apply")
		}
		if err := unstructured.SetNestedField(cur.Object, edited, "spec", "script", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
	})
	waitValue(t, ns, "deco-edit-a", "v2-1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "DecoratorController", "", dc.GetName())
		p, _, _ := unstructured.NestedInt64(cur.Object, "status", "parents")
		c, _, _ := unstructured.NestedInt64(cur.Object, "status", "children")
		return p == 1 && c == 1 && enginetest.Condition(cur, "Ready") == "True", fmt.Sprintf("status %v", cur.Object["status"])
	})
	// Counts that drop to zero are written as zero, not left at their last value.
	env.Delete(t, getBundle(t, ns, "e"))
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "DecoratorController", "", dc.GetName())
		p, pFound, _ := unstructured.NestedInt64(cur.Object, "status", "parents")
		c, cFound, _ := unstructured.NestedInt64(cur.Object, "status", "children")
		return pFound && cFound && p == 0 && c == 0, fmt.Sprintf("status %v", cur.Object["status"])
	})
}

// TestDecoratorIgnoreStatusChanges: a decorator whose resource rule sets ignoreStatusChanges
// does not sync a target whose status alone changed; one that does not set it syncs the
// target, which proves that the change reached the engine. A change beyond the status syncs
// both.
func TestDecoratorIgnoreStatusChanges(t *testing.T) {
	controller(t, "decorator-status.yaml", "NAME", "deco-status-ignores", "IGNORE", "true")
	controller(t, "decorator-status.yaml", "NAME", "deco-status-notices", "IGNORE", "false")
	const ignores, notices = "decoratorcontroller/deco-status-ignores", "decoratorcontroller/deco-status-notices"
	ns := env.Namespace(t)
	b := target(t, ns, "s", "decorator-status", false, map[string]any{})
	for _, ctl := range []string{ignores, notices} {
		enginetest.Eventually(t, wait, func() (bool, string) {
			return reconciles(ctl, "success") >= 1, ctl + " never synced the target"
		})
		waitIdle(t, ctl)
	}
	before := reconciles(ignores, "success")
	actedOn(t, notices, 1, func() {
		_, err := env.Client(t, b).Patch(t.Context(), b.GetName(), types.MergePatchType,
			[]byte(`{"status":{"external":"changed"}}`), metav1.PatchOptions{FieldManager: "someone-else"}, "status")
		if err != nil {
			t.Fatal(err)
		}
	})
	waitIdle(t, ignores)
	if n := reconciles(ignores, "success") - before; n != 0 {
		t.Fatalf("%v syncs after the target's status alone changed, with ignoreStatusChanges", n)
	}
	// The same decorator does sync a change of the target's labels.
	actedOn(t, ignores, 1, func() { env.Patch(t, b, `{"metadata":{"labels":{"changed":"yes"}}}`) })
}

// TestDecoratorAttachmentKeys: the request keys attachments of a namespaced target by name,
// and by namespace/name under version v2.
func TestDecoratorAttachmentKeys(t *testing.T) {
	for _, tc := range []struct {
		version string
		key     func(ns, name string) string
	}{
		{"v1", func(_, name string) string { return name }},
		{"v2", func(ns, name string) string { return ns + "/" + name }},
	} {
		t.Run(tc.version, func(t *testing.T) {
			name := "deco-keys-" + tc.version
			controller(t, "decorator-keys.yaml", "NAME", name, "VERSION", "version: "+tc.version)
			ns := env.Namespace(t)
			target(t, ns, "k", name, false, map[string]any{})
			waitValue(t, ns, "k-att", "1")
			want := []string{tc.key(ns, "k-att")}
			waitBundle(t, ns, "k", "status.keys", func(b *unstructured.Unstructured) bool {
				keys, _, _ := unstructured.NestedStringSlice(b.Object, "status", "keys")
				return fmt.Sprint(keys) == fmt.Sprint(want)
			})
		})
	}
}
