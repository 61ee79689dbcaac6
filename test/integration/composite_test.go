package integration

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/manager"
	"metascript.dev/metascript/test/enginetest"
)

var env *enginetest.Env

func TestMain(m *testing.M) {
	// The namespaced controllers of these tests name accounts of their own (tenantAccount): the
	// engine lets them, as with the admission webhook installed. test/tenantpolicy runs
	// metascript run's default, each namespace's "default" account only.
	// Tenants' webhooks in these tests are servers on loopback: allowed, as a platform allows
	// its tenants' hook servers (test/tenantpolicy tries the policy itself).
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{filepath.Join("testdata", "crds")},
		TenantAccounts: manager.AnyAccount,
		TenantWebhooks: &hooks.Egress{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Setting: "--tenant-webhook-allow"}}, &env)
}

const (
	wait      = 20 * time.Second
	bundleAPI = "test.metascript.dev/v1"
)

// controller creates the controller of a testdata file, with replacements applied to its
// text, and deletes it when the test ends.
func controller(t *testing.T, file string, replace ...string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(replace...).Replace(string(data))
	out := env.Create(t, "", enginetest.Object(t, text))
	t.Cleanup(func() { deleteController(t, out) })
	return out
}

// deleteController deletes a controller resource and waits until it is gone: the engine
// holds it until its parents are released, and the next test may create one of that name.
func deleteController(t *testing.T, cc *unstructured.Unstructured) {
	t.Helper()
	env.Delete(t, cc)
	enginetest.Eventually(t, wait, func() (bool, string) {
		return env.Get(t, cc.GetAPIVersion(), cc.GetKind(), cc.GetNamespace(), cc.GetName()) == nil,
			fmt.Sprintf("%s %s still there", cc.GetKind(), cc.GetName())
	})
}

// bundle creates a Bundle labelled suite=<suite> selecting app=<app>, with one item per
// name=value pair, in order.
func bundle(t *testing.T, ns, name, suite, app string, items ...string) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": suite}},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": app}},
			"items":    itemList(items...),
		},
	}})
}

func itemList(items ...string) []any {
	list := []any{}
	for _, it := range items {
		k, v, _ := strings.Cut(it, "=")
		list = append(list, map[string]any{"name": k, "value": v})
	}
	return list
}

func getBundle(t *testing.T, ns, name string) *unstructured.Unstructured {
	return env.Get(t, bundleAPI, "Bundle", ns, name)
}

func configMap(t *testing.T, ns, name string) *unstructured.Unstructured {
	return env.Get(t, "v1", "ConfigMap", ns, name)
}

func value(cm *unstructured.Unstructured) string {
	if cm == nil {
		return "<absent>"
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", "value")
	return v
}

func controlledBy(cm, parent *unstructured.Unstructured) bool {
	for _, r := range cm.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.UID == parent.GetUID() {
			return true
		}
	}
	return false
}

// waitValue waits until ConfigMap ns/name holds data.value == want.
func waitValue(t *testing.T, ns, name, want string) *unstructured.Unstructured {
	t.Helper()
	var cm *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm = configMap(t, ns, name)
		return value(cm) == want, fmt.Sprintf("%s data.value = %q, want %q", name, value(cm), want)
	})
	return cm
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm := configMap(t, ns, name)
		return cm == nil || cm.GetDeletionTimestamp() != nil, name + " still exists"
	})
}

func TestChildrenCreatedUpdatedDeleted(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "b1", "basic", "b1", "a=1", "b=2")
	a := waitValue(t, ns, "b1-a", "1")
	waitValue(t, ns, "b1-b", "2")
	if !controlledBy(a, b) {
		t.Fatalf("b1-a ownerReferences = %+v, want the Bundle as controller", a.GetOwnerReferences())
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "b1")
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
		g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
		return n == 2 && g == p.GetGeneration(), fmt.Sprintf("status = %v", p.Object["status"])
	})
	env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"changed"}]}}`)
	waitValue(t, ns, "b1-a", "changed")
	waitGone(t, ns, "b1-b")
}

func TestAdoptsMatchingOrphan(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	orphan := env.Create(t, ns, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: b2-a, labels: {app: b2}}
data: {value: old, extra: kept-by-user}`))
	b := bundle(t, ns, "b2", "basic", "b2", "a=new")
	cm := waitValue(t, ns, "b2-a", "new")
	if cm.GetUID() != orphan.GetUID() {
		t.Fatalf("orphan was replaced (UID %s → %s), want it adopted", orphan.GetUID(), cm.GetUID())
	}
	if !controlledBy(cm, b) {
		t.Fatalf("orphan not adopted: ownerReferences = %+v", cm.GetOwnerReferences())
	}
}

func TestReleasesChildThatStopsMatching(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "b3", "basic", "b3", "a=1")
	waitValue(t, ns, "b3-a", "1")
	// An object the parent owns (its ControllerRef says so) but whose labels do not match:
	// the parent must release it, not delete it.
	stray := env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: stray
  labels: {app: elsewhere}
  ownerReferences:
    - {apiVersion: %s, kind: Bundle, name: b3, uid: %s, controller: true}
data: {value: stray}`, bundleAPI, b.GetUID())))
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm := configMap(t, ns, "stray")
		if cm == nil || cm.GetDeletionTimestamp() != nil {
			t.Fatal("the stray child was deleted; it should have been released")
		}
		return len(cm.GetOwnerReferences()) == 0, fmt.Sprintf("ownerReferences = %+v", cm.GetOwnerReferences())
	})
	if cm := configMap(t, ns, "stray"); cm.GetUID() != stray.GetUID() || value(cm) != "stray" {
		t.Fatalf("released child was changed: %v", cm.Object)
	}
}

// TestSelectorEditMovesChildren edits a parent's spec.selector: the engine must use the new
// selector at once (it caches parsed selectors per resourceVersion), releasing the child
// that no longer matches and adopting the orphan that now does.
func TestSelectorEditMovesChildren(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "b6", "basic", "b6-old", "x=1")
	waitValue(t, ns, "b6-x", "1")
	orphan := env.Create(t, ns, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: b6-y, labels: {app: b6-new}}
data: {value: orphan}`))
	env.Patch(t, b, `{"spec":{"selector":{"matchLabels":{"app":"b6-new"}},"items":[{"name":"y","value":"new"}]}}`)
	cm := waitValue(t, ns, "b6-y", "new")
	if cm.GetUID() != orphan.GetUID() || !controlledBy(cm, b) {
		t.Fatalf("orphan not adopted: UID %s (was %s), ownerReferences %+v", cm.GetUID(), orphan.GetUID(), cm.GetOwnerReferences())
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		old := configMap(t, ns, "b6-x")
		if old == nil || old.GetDeletionTimestamp() != nil {
			t.Fatal("the child that stopped matching was deleted; it should have been released")
		}
		return len(old.GetOwnerReferences()) == 0, fmt.Sprintf("b6-x ownerReferences = %+v", old.GetOwnerReferences())
	})
}

func TestLeavesObjectsOwnedByOthersAlone(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	other := env.Create(t, ns, enginetest.Object(t, `
apiVersion: test.metascript.dev/v1
kind: Bundle
metadata: {name: someone-else}
spec: {selector: {matchLabels: {app: none}}}`))
	foreign := env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: b4-a
  labels: {app: b4}
  ownerReferences:
    - {apiVersion: %s, kind: Bundle, name: someone-else, uid: %s, controller: true}
data: {value: theirs}`, bundleAPI, other.GetUID())))
	b := bundle(t, ns, "b4", "basic", "b4", "a=mine", "b=2")
	waitValue(t, ns, "b4-b", "2")
	enginetest.Eventually(t, wait, func() (bool, string) {
		ev := env.Events(t, ns, "b4")
		return len(ev["ChildConflict"]) > 0, fmt.Sprintf("events = %v", ev)
	})
	cm := configMap(t, ns, "b4-a")
	if cm.GetResourceVersion() != foreign.GetResourceVersion() || value(cm) != "theirs" || controlledBy(cm, b) {
		t.Fatalf("an object owned by another controller was touched: %v", cm.Object)
	}
}

func TestOverlappingSelectorsDoNotFight(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	p1 := bundle(t, ns, "p1", "basic", "shared", "x=1")
	p2 := bundle(t, ns, "p2", "basic", "shared", "y=2")
	x, y := waitValue(t, ns, "p1-x", "1"), waitValue(t, ns, "p2-y", "2")
	if !controlledBy(x, p1) || !controlledBy(y, p2) {
		t.Fatalf("owners: p1-x %+v, p2-y %+v", x.GetOwnerReferences(), y.GetOwnerReferences())
	}
	// Touch both parents; neither may take, change or delete the other's child.
	actedOn(t, "compositecontroller/bundle-starlark", 2, func() {
		env.Patch(t, p1, `{"metadata":{"annotations":{"touch":"1"}}}`)
		env.Patch(t, p2, `{"metadata":{"annotations":{"touch":"1"}}}`)
	})
	x2, y2 := configMap(t, ns, "p1-x"), configMap(t, ns, "p2-y")
	if x2.GetResourceVersion() != x.GetResourceVersion() || y2.GetResourceVersion() != y.GetResourceVersion() {
		t.Fatalf("children changed while nothing they hold changed: p1-x rv %s→%s, p2-y rv %s→%s",
			x.GetResourceVersion(), x2.GetResourceVersion(), y.GetResourceVersion(), y2.GetResourceVersion())
	}
}

func TestUpdateMethods(t *testing.T) {
	for _, tc := range []struct {
		method      string
		wantUpdated bool // data changes without a manual delete
		wantNewUID  bool
	}{
		{method: "OnDelete", wantUpdated: false},
		{method: "Recreate", wantUpdated: true, wantNewUID: true},
		{method: "InPlace", wantUpdated: true, wantNewUID: false},
	} {
		t.Run(tc.method, func(t *testing.T) {
			lower := strings.ToLower(tc.method)
			controller(t, "method.yaml", "METHOD_LOWER", lower, "METHOD", tc.method)
			ns := env.Namespace(t)
			b := bundle(t, ns, "m", "none", "m", "a=1")
			env.Patch(t, b, fmt.Sprintf(`{"metadata":{"labels":{"method":%q}}}`, lower))
			first := waitValue(t, ns, "m-a", "1")
			touch := func() { env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"2"}]}}`) }
			if !tc.wantUpdated {
				actedOn(t, "compositecontroller/method-"+lower, 1, touch)
				if v := value(configMap(t, ns, "m-a")); v != "1" {
					t.Fatalf("OnDelete updated an existing child: value %q", v)
				}
				env.Delete(t, first)
				second := waitValue(t, ns, "m-a", "2")
				if second.GetUID() == first.GetUID() {
					t.Fatal("child not recreated after deletion")
				}
				return
			}
			touch()
			second := waitValue(t, ns, "m-a", "2")
			if newUID := second.GetUID() != first.GetUID(); newUID != tc.wantNewUID {
				t.Fatalf("child replaced = %v, want %v", newUID, tc.wantNewUID)
			}
		})
	}
}

func TestHookFailuresChangeNothing(t *testing.T) {
	controller(t, "modes-starlark.yaml")
	for _, tc := range []struct{ mode, reason, message string }{
		{"throw", "HookFailed", "mode is throw"},
		{"loop", "HookBudgetExceeded", "budget"},
		{"unlabelled", "InvalidHookResponse", "children[0].metadata.labels"},
		{"badtype", "InvalidHookResponse", "children[0].metadata.name"},
		{"undeclared", "InvalidHookResponse", "children[1]"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ns := env.Namespace(t)
			b := bundle(t, ns, "f", "modes", "f", "a=1", "b=2")
			waitValue(t, ns, "f-b", "2")
			var before *unstructured.Unstructured
			enginetest.Eventually(t, wait, func() (bool, string) {
				before = getBundle(t, ns, "f")
				n, _, _ := unstructured.NestedInt64(before.Object, "status", "configMaps")
				return n == 2, fmt.Sprintf("status %v", before.Object["status"])
			})
			a := configMap(t, ns, "f-a")
			// A failing hook while the spec asks for changes: drop b, change a.
			failedAfter(t, "compositecontroller/modes", func() {
				env.Patch(t, b, fmt.Sprintf(`{"spec":{"mode":%q,"items":[{"name":"a","value":"CHANGED"}]}}`, tc.mode))
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
			if cm := configMap(t, ns, "f-a"); cm.GetResourceVersion() != a.GetResourceVersion() {
				t.Fatalf("f-a changed after a failed hook: %v", cm.Object["data"])
			}
			if cm := configMap(t, ns, "f-b"); cm == nil || cm.GetDeletionTimestamp() != nil {
				t.Fatal("f-b deleted after a failed hook")
			}
			after := getBundle(t, ns, "f")
			if fmt.Sprint(after.Object["status"]) != fmt.Sprint(before.Object["status"]) {
				t.Fatalf("status changed after a failed hook: %v → %v", before.Object["status"], after.Object["status"])
			}
			// Recovery: a good spec converges again.
			env.Patch(t, b, `{"spec":{"mode":"ok"}}`)
			waitValue(t, ns, "f-a", "CHANGED")
			waitGone(t, ns, "f-b")
		})
	}
}

func TestFinalize(t *testing.T) {
	controller(t, "finalize.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "fin", "finalize", "fin", "a=1", "b=2", "c=3")
	waitValue(t, ns, "fin-c", "3")
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "fin")
		return len(p.GetFinalizers()) == 1, fmt.Sprintf("finalizers = %v", p.GetFinalizers())
	})
	env.Delete(t, b)
	for _, name := range []string{"fin-c", "fin-b", "fin-a"} {
		waitGone(t, ns, name)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "fin")
		if p == nil {
			return true, ""
		}
		return false, fmt.Sprintf("parent still there with finalizers %v", p.GetFinalizers())
	})
}

// TestFinalizerRemovedWhenHookDropped: a controller edit that drops the finalize hook
// releases the finalizer it held on every parent.
func TestFinalizerRemovedWhenHookDropped(t *testing.T) {
	cc := controller(t, "finalize.yaml")
	ns := env.Namespace(t)
	bundle(t, ns, "drop", "finalize", "drop", "a=1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "drop")
		return len(p.GetFinalizers()) == 1, fmt.Sprintf("finalizers = %v", p.GetFinalizers())
	})
	editController(t, cc.GetName(), func(cur *unstructured.Unstructured) {
		unstructured.RemoveNestedField(cur.Object, "spec", "hooks", "finalize")
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "drop")
		return len(p.GetFinalizers()) == 0, fmt.Sprintf("finalizers = %v", p.GetFinalizers())
	})
}

func TestResyncAfterSeconds(t *testing.T) {
	controller(t, "resync.yaml")
	ns := env.Namespace(t)
	bundle(t, ns, "r", "resync", "r")
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "r")
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "syncs")
		return n >= 4, fmt.Sprintf("syncs = %d", n)
	})
}

func TestControllerEditRecompilesAndResyncs(t *testing.T) {
	cc := controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	bundle(t, ns, "e", "basic", "e", "a=1")
	waitValue(t, ns, "e-a", "1")
	src, _, _ := unstructured.NestedString(cc.Object, "spec", "hooks", "sync", "starlark", "source")
	edited := strings.Replace(src, `"value": item["value"]`, `"value": "v2-" + item["value"]`, 1)
	if edited == src {
		t.Fatal("test fixture changed: replacement did not apply")
	}
	editController(t, cc.GetName(), func(cur *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(cur.Object, edited, "spec", "hooks", "sync", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
	})
	waitValue(t, ns, "e-a", "v2-1")
}

func TestSyntaxErrorReportedAndNoParentTouched(t *testing.T) {
	const ctl = "compositecontroller/syntax-error"
	added, _, _ := queueCounts(t, ctl)
	cc := controller(t, "syntax-error.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "s", "syntax", "s", "a=1")
	var msg string
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", cc.GetName())
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "HooksCompiled" && m["status"] == "False" {
				msg, _ = m["message"].(string)
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions = %v", conds)
	})
	if !strings.Contains(msg, "hooks.sync") || !strings.Contains(msg, ":2:") {
		t.Fatalf("HooksCompiled message %q does not locate the error (hook and line 2)", msg)
	}
	// The manager has handled it, and counts it as failed: no runner, so no work queue.
	waitManagerSettled(t)
	if now, _, _ := queueCounts(t, ctl); now != added {
		t.Fatalf("%v parents queued for a controller that does not compile", now-added)
	}
	p := getBundle(t, ns, "s")
	if p.GetResourceVersion() != b.GetResourceVersion() {
		t.Fatalf("parent touched by a controller that does not compile: %v", p.Object)
	}
	if cm := configMap(t, ns, "s-a"); cm != nil {
		t.Fatal("child created by a controller that does not compile")
	}
}

func TestClusterScopedParentWithNamespacedChildren(t *testing.T) {
	controller(t, "cluster-bundle.yaml")
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	p := env.Create(t, "", enginetest.Object(t, fmt.Sprintf(`
apiVersion: test.metascript.dev/v1
kind: ClusterBundle
metadata: {name: cb-%s}
spec:
  selector: {matchLabels: {app: cb}}
  namespaces: [%s, %s]`, ns1, ns1, ns2)))
	t.Cleanup(func() { env.Delete(t, p) })
	for _, ns := range []string{ns1, ns2} {
		cm := waitValue(t, ns, "copy", p.GetName())
		if !controlledBy(cm, p) {
			t.Fatalf("%s/copy not controlled by the ClusterBundle", ns)
		}
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, bundleAPI, "ClusterBundle", "", p.GetName())
		keys, _, _ := unstructured.NestedStringSlice(cur.Object, "status", "keys")
		sort.Strings(keys)
		want := []string{ns1 + "/copy", ns2 + "/copy"}
		sort.Strings(want)
		return fmt.Sprint(keys) == fmt.Sprint(want), fmt.Sprintf("status.keys = %v, want %v", keys, want)
	})
}

func TestGenerateSelector(t *testing.T) {
	controller(t, "generate-selector.yaml")
	ns := env.Namespace(t)
	b := env.Create(t, ns, enginetest.Object(t, `
apiVersion: test.metascript.dev/v1
kind: Bundle
metadata: {name: g, labels: {suite: generate}}
spec: {items: [{name: a, value: "1"}]}`))
	cm := waitValue(t, ns, "g-a", "1")
	if cm.GetLabels()["metascript.dev/controller-uid"] != string(b.GetUID()) || !controlledBy(cm, b) {
		t.Fatalf("generated selector label or owner missing: labels %v owners %+v", cm.GetLabels(), cm.GetOwnerReferences())
	}
}

// TestParentResourceInstalledLater: a controller whose parent CRD is not served yet reports
// Ready=False and starts once the CRD appears, without a restart.
func TestParentResourceInstalledLater(t *testing.T) {
	cc := controller(t, "late.yaml")
	readyReason := func() string {
		cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", cc.GetName())
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "Ready" {
				return fmt.Sprint(m["status"], "/", m["reason"])
			}
		}
		return ""
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		r := readyReason()
		return r == "False/ResourceNotFound", "Ready = " + r
	})
	crd := env.Create(t, "", enginetest.ObjectsFromFile(t, filepath.Join("testdata", "late-crd.yaml"))[0])
	t.Cleanup(func() { env.Delete(t, crd) })
	enginetest.Eventually(t, 60*time.Second, func() (bool, string) {
		r := readyReason()
		return r == "True/Running", "Ready = " + r
	})
}

// TestHookSourceFromConfigMap: a hook whose source is a ConfigMap key runs like an inline one.
func TestHookSourceFromConfigMap(t *testing.T) {
	objs := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "configmap-source.yaml"))
	src := env.Create(t, "default", objs[0])
	t.Cleanup(func() { env.Delete(t, src) })
	cc := env.Create(t, "", objs[1])
	t.Cleanup(func() { env.Delete(t, cc) })
	ns := env.Namespace(t)
	bundle(t, ns, "cms", "configmap-source", "cms", "a=1")
	waitValue(t, ns, "cms-a", "from-configmap-1")
}

// TestDeletedControllerStopsReconciling: once its controller is deleted, a parent's edits no
// longer reach its children, and nothing is deleted on the way out.
func TestDeletedControllerStopsReconciling(t *testing.T) {
	const ctl = "compositecontroller/bundle-starlark"
	seen := witness(t, "deleted-controller")
	cc := controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	b := witnessed(t, bundle(t, ns, "gone", "basic", "gone", "a=1"), "deleted-controller")
	waitValue(t, ns, "gone-a", "1")
	env.Delete(t, cc)
	enginetest.Eventually(t, wait, func() (bool, string) {
		return env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", cc.GetName()) == nil, "controller still exists"
	})
	waitManagerSettled(t) // the deleted controller's runner has stopped
	added, _, _ := queueCounts(t, ctl)
	// The witness reconciles the edit: it reached the engine.
	actedOn(t, seen, 1, func() {
		env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"2"},{"name":"b","value":"3"}]}}`)
	})
	if now, _, _ := queueCounts(t, ctl); now != added {
		t.Fatalf("%v parents queued for a deleted controller", now-added)
	}
	if v := value(configMap(t, ns, "gone-a")); v != "1" {
		t.Fatalf("gone-a = %q after its controller was deleted, want it untouched", v)
	}
	if cm := configMap(t, ns, "gone-b"); cm != nil {
		t.Fatal("a child was created after the controller was deleted")
	}
}

// TestLeavesUnadoptedOrphansAlone: an object no controller owns, under a desired child's name
// but not matching the parent's selector, is not taken over (nor later deleted): a
// ChildConflict Event says so, and once it is gone the child is created.
func TestLeavesUnadoptedOrphansAlone(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	theirs := env.Create(t, ns, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: o-a, labels: {app: someone-else}}
data: {value: theirs, mine: kept}`))
	bundle(t, ns, "o", "basic", "o", "a=1", "b=2")
	waitValue(t, ns, "o-b", "2")
	enginetest.Eventually(t, wait, func() (bool, string) {
		ev := env.Events(t, ns, "o")
		return len(ev["ChildConflict"]) > 0, fmt.Sprintf("events = %v", ev)
	})
	if cm := configMap(t, ns, "o-a"); cm.GetResourceVersion() != theirs.GetResourceVersion() || len(cm.GetOwnerReferences()) != 0 {
		t.Fatalf("an unadopted orphan was written: %v", cm.Object)
	}
	env.Delete(t, theirs)
	waitValue(t, ns, "o-a", "1")
}

// TestLeavesUncachedOrphansAlone: an orphan carrying none of the label keys the parents'
// selectors require is not cached at all, so a desired child's name it holds is only found
// by the create: a ChildConflict Event says so, as for a cached one, the orphan is left
// untouched, and once it is gone the child is created.
func TestLeavesUncachedOrphansAlone(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	theirs := env.Create(t, ns, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: u-a, labels: {owner: someone}}
data: {value: theirs}`))
	bundle(t, ns, "u", "basic", "u", "a=1", "b=2")
	waitValue(t, ns, "u-b", "2")
	env.WaitEvent(t, wait, ns, "u", "ChildConflict", "u-a exists and belongs to no controller")
	if cm := configMap(t, ns, "u-a"); cm.GetResourceVersion() != theirs.GetResourceVersion() || len(cm.GetOwnerReferences()) != 0 {
		t.Fatalf("an orphan no parent may adopt was written: %v", cm.Object)
	}
	env.Delete(t, theirs)
	waitValue(t, ns, "u-a", "1")
}

// TestAdoptsOrphanWithANewLabelKey: the child informer caches only orphans carrying a label
// key some parent's selector requires. An orphan labelled with a key no parent used yet is
// adopted once a parent selecting by that key arrives, by the parent's first reconcile: the
// cache catches up before the parent is reconciled (a reconcile before would try to create
// the child, fail, and count an error).
func TestAdoptsOrphanWithANewLabelKey(t *testing.T) {
	cc := controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-new-key", "suite: basic", "suite: new-key")
	waitControllerReady(t, "CompositeController", cc.GetName())
	ns := env.Namespace(t)
	orphan := env.Create(t, ns, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: k-a, labels: {fresh-key: k}}
data: {value: old}`))
	b := env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle",
		"metadata": map[string]any{"name": "k", "namespace": ns, "labels": map[string]any{"suite": "new-key"}},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"fresh-key": "k"}},
			"items":    itemList("a=new"),
		},
	}})
	cm := waitValue(t, ns, "k-a", "new")
	if cm.GetUID() != orphan.GetUID() || !controlledBy(cm, b) {
		t.Fatalf("orphan not adopted: UID %s (was %s), ownerReferences %+v", cm.GetUID(), orphan.GetUID(), cm.GetOwnerReferences())
	}
	if n := reconciles("compositecontroller/bundle-new-key", "error"); n != 0 {
		t.Fatalf("%v reconciles failed: the parent was reconciled before the orphan was cached", n)
	}
}
