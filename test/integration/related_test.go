package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
)

// relatedController creates testdata/related.yaml named name on Bundles labelled
// suite=suite; v2 sets both hooks' version.
func relatedController(t *testing.T, name, suite string, v2 bool) *unstructured.Unstructured {
	t.Helper()
	version := ""
	if v2 {
		version = "version: v2"
	}
	return controller(t, "related.yaml", "NAME", name, "SUITE", suite, "VERSION", version)
}

// source creates a ConfigMap holding data.value, which no Bundle's selector matches.
func source(t *testing.T, ns, name, value string) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, labels: {role: source}}
data: {value: %q}`, name, value)))
}

// relatedBundle creates a Bundle of suite selecting app=name whose spec.sources are sources.
func relatedBundle(t *testing.T, ns, name, suite string, sources ...string) *unstructured.Unstructured {
	t.Helper()
	b := bundle(t, ns, name, suite, name)
	list := make([]any, len(sources))
	for i, s := range sources {
		list[i] = s
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"sources": list}})
	return env.Patch(t, b, string(patch))
}

func waitData(t *testing.T, ns, name, key, want string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm := configMap(t, ns, name)
		got := "<absent>"
		if cm != nil {
			if v, ok, _ := unstructured.NestedString(cm.Object, "data", key); ok {
				got = v
			}
		}
		return got == want, fmt.Sprintf("%s data[%s] = %q, want %q", name, key, got, want)
	})
}

// TestRelatedByNames: related objects named by customize reach sync, and a change to one of
// them wakes exactly the parent that selects it.
func TestRelatedByNames(t *testing.T) {
	relatedController(t, "related-names", "related-names", false)
	ns := env.Namespace(t)
	a := source(t, ns, "a", "1")
	source(t, ns, "b", "2")
	relatedBundle(t, ns, "pa", "related-names", "a")
	relatedBundle(t, ns, "pb", "related-names", "b")
	waitData(t, ns, "pa-merged", "a", "1")
	waitData(t, ns, "pb-merged", "b", "2")
	const ctl = "compositecontroller/related-names"
	waitIdle(t, ctl)
	pa, pb := syncsOf(t, ns, "pa"), syncsOf(t, ns, "pb")
	env.Patch(t, a, `{"data":{"value":"changed"}}`)
	waitData(t, ns, "pa-merged", "a", "changed")
	waitIdle(t, ctl)
	if n := syncsOf(t, ns, "pb"); n != pb {
		t.Fatalf("the parent that does not select the changed object synced %d times, want 0", n-pb)
	}
	if n := syncsOf(t, ns, "pa"); n == pa {
		t.Fatal("the parent that selects the changed object did not sync")
	}
}

// syncsOf is how many times a Bundle of testdata/related.yaml was synced.
func syncsOf(t *testing.T, ns, name string) int64 {
	t.Helper()
	n, _, _ := unstructured.NestedInt64(getBundle(t, ns, name).Object, "status", "syncs")
	return n
}

// TestRelatedRulesChange: a parent that stops naming an object sees the new one, and the
// old one's changes no longer wake it once the new rules are recorded; they still wake a
// parent that names it.
func TestRelatedRulesChange(t *testing.T) {
	relatedController(t, "related-change", "related-change", false)
	const ctl = "compositecontroller/related-change"
	ns := env.Namespace(t)
	old := source(t, ns, "old", "1")
	source(t, ns, "new", "2")
	p := relatedBundle(t, ns, "p", "related-change", "old")
	relatedBundle(t, ns, "keeps", "related-change", "old")
	waitData(t, ns, "p-merged", "old", "1")
	waitData(t, ns, "keeps-merged", "old", "1")
	env.Patch(t, p, `{"spec":{"sources":["new"]}}`)
	waitData(t, ns, "p-merged", "new", "2")
	waitData(t, ns, "p-merged", "old", "<absent>")
	waitIdle(t, ctl)
	before := syncsOf(t, ns, "p")
	env.Patch(t, old, `{"data":{"value":"ignored"}}`)
	// The change reached the engine: the parent that still names the object synced.
	waitData(t, ns, "keeps-merged", "old", "ignored")
	waitIdle(t, ctl)
	if n := syncsOf(t, ns, "p") - before; n != 0 {
		t.Fatalf("%d syncs after an object the parent no longer selects changed, want 0", n)
	}
}

// TestRelatedV2Keys: under version v2 related objects are keyed namespace/name.
func TestRelatedV2Keys(t *testing.T) {
	relatedController(t, "related-v2", "related-v2", true)
	ns := env.Namespace(t)
	source(t, ns, "a", "1")
	relatedBundle(t, ns, "p", "related-v2", "a")
	waitData(t, ns, "p-merged", ns+".a", "1")
}

// TestRelatedV2BeyondNamespace: a namespaced parent whose customize and sync hooks are of
// version v2 reads related objects in another namespace it names, or in every namespace when
// it names none, and a change in one of those namespaces wakes it; under v1 the same rules
// select in its own namespace only.
func TestRelatedV2BeyondNamespace(t *testing.T) {
	relatedController(t, "related-beyond", "related-beyond", true)
	relatedController(t, "related-own", "related-own", false)
	home, srcA, srcB := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	labelled := func(ns, name, value string) *unstructured.Unstructured {
		return env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, labels: {beyond: %s}}
data: {value: %q}`, name, home, value)))
	}
	a := labelled(srcA, "a", "1")
	b := labelled(srcB, "b", "2")
	labelled(home, "h", "3")
	wide := bundle(t, home, "wide", "related-beyond", "wide")
	env.Patch(t, wide, fmt.Sprintf(`{"spec":{"sourceLabels":{"beyond":%q}}}`, home))
	narrow := bundle(t, home, "narrow", "related-beyond", "narrow")
	env.Patch(t, narrow, fmt.Sprintf(`{"spec":{"sourceLabels":{"beyond":%q},"sourceNamespace":%q}}`, home, srcA))
	own := bundle(t, home, "own", "related-own", "own")
	env.Patch(t, own, fmt.Sprintf(`{"spec":{"sourceLabels":{"beyond":%q}}}`, home))

	waitData(t, home, "wide-merged", srcA+".a", "1")
	waitData(t, home, "wide-merged", srcB+".b", "2")
	waitData(t, home, "wide-merged", home+".h", "3")
	waitData(t, home, "narrow-merged", srcA+".a", "1")
	waitData(t, home, "own-merged", "h", "3")
	for _, c := range []struct{ name, key string }{{"narrow-merged", srcB + ".b"}, {"narrow-merged", home + ".h"}, {"own-merged", "a"}, {"own-merged", "b"}} {
		waitData(t, home, c.name, c.key, "<absent>")
	}
	env.Patch(t, b, `{"data":{"value":"changed"}}`)
	waitData(t, home, "wide-merged", srcB+".b", "changed")
	env.Patch(t, a, `{"data":{"value":"changed"}}`)
	waitData(t, home, "narrow-merged", srcA+".a", "changed")
}

// TestCustomizeFailureChangesNothing: a customize hook that throws writes nothing: neither the
// child nor the parent's status.
func TestCustomizeFailureChangesNothing(t *testing.T) {
	relatedController(t, "related-fail", "related-fail", false)
	ns := env.Namespace(t)
	source(t, ns, "a", "1")
	source(t, ns, "b", "2")
	p := relatedBundle(t, ns, "p", "related-fail", "a")
	waitData(t, ns, "p-merged", "a", "1")
	waitIdle(t, "compositecontroller/related-fail")
	before, syncs := configMap(t, ns, "p-merged"), syncsOf(t, ns, "p")
	failedAfter(t, "compositecontroller/related-fail", func() {
		env.Patch(t, p, `{"spec":{"sources":["b"],"customizeFails":true}}`)
	})
	env.WaitEvent(t, wait, ns, "p", "HookFailed", "customize hook", "customize says no")
	if cur := configMap(t, ns, "p-merged"); cur.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("the child changed after customize failed: %v", cur.Object["data"])
	}
	if n := syncsOf(t, ns, "p"); n != syncs {
		t.Fatalf("the parent's status changed after customize failed: syncs %d → %d", syncs, n)
	}
	env.Patch(t, p, `{"spec":{"customizeFails":false}}`)
	waitData(t, ns, "p-merged", "b", "2")
}

// TestRelatedAcrossNamespaces: a cluster-scoped parent selects related objects by label in
// every namespace, then only in the namespaces a namespaceSelector picks; a namespace
// labelled later joins.
func TestRelatedAcrossNamespaces(t *testing.T) {
	controller(t, "related-cluster.yaml")
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	shared := fmt.Sprintf("s%d", time.Now().UnixNano()%100000)
	for _, ns := range []string{ns1, ns2} {
		env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: c, labels: {shared: %q}}`, shared)))
	}
	p := env.Create(t, "", enginetest.Object(t, fmt.Sprintf(`
apiVersion: test.metascript.dev/v1
kind: ClusterBundle
metadata: {name: rc-%s, labels: {suite: related-cluster}}
spec: {shared: %q}`, shared, shared)))
	t.Cleanup(func() { env.Delete(t, p) })
	keys := func(want ...string) {
		t.Helper()
		enginetest.Eventually(t, wait, func() (bool, string) {
			cur := env.Get(t, bundleAPI, "ClusterBundle", "", p.GetName())
			got, _, _ := unstructured.NestedStringSlice(cur.Object, "status", "keys")
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("status.keys = %v, want %v", got, want)
		})
	}
	both := []string{ns1 + "/c", ns2 + "/c"}
	if both[0] > both[1] {
		both[0], both[1] = both[1], both[0]
	}
	keys(both...)
	team := "t-" + shared
	env.Patch(t, p, fmt.Sprintf(`{"spec":{"team":%q}}`, team))
	keys()
	nsObj := env.Get(t, "v1", "Namespace", "", ns2)
	env.Patch(t, nsObj, fmt.Sprintf(`{"metadata":{"labels":{"team":%q}}}`, team))
	keys(ns2 + "/c")
}

// TestDecoratorCustomizeWebhook: a decorator's customize hook served by a webhook.
func TestDecoratorCustomizeWebhook(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Parent struct {
				Spec struct{ Source string } `json:"spec"`
			} `json:"parent"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"relatedResources": []any{map[string]any{
			"apiVersion": "v1", "resource": "configmaps", "names": []any{req.Parent.Spec.Source}}}})
	}))
	defer srv.Close()
	controller(t, "related-decorator.yaml", "WEBHOOK_URL", srv.URL)
	ns := env.Namespace(t)
	src := source(t, ns, "s", "v1")
	env.Create(t, ns, enginetest.Object(t, `
apiVersion: test.metascript.dev/v1
kind: Bundle
metadata: {name: d, labels: {suite: related-decorator}}
spec: {source: s}`))
	waitBundle(t, ns, "d", "labelled from the related object", func(b *unstructured.Unstructured) bool {
		return b.GetLabels()["related-value"] == "v1"
	})
	env.Patch(t, src, `{"data":{"value":"v2"}}`)
	waitBundle(t, ns, "d", "relabelled after the related object changed", func(b *unstructured.Unstructured) bool {
		return b.GetLabels()["related-value"] == "v2"
	})
}

// TestCustomizeAnswerKept: the customize answer is kept per parent. A sync brought by a
// related object or by a child calls customize no more; a change of the parent's labels,
// annotations or spec asks it again, once, and so does an edit of the controller.
func TestCustomizeAnswerKept(t *testing.T) {
	cc := relatedController(t, "related-cache", "related-cache", false)
	const ctl = "compositecontroller/related-cache"
	customizeCalls := func() float64 { return hookCalls(ctl, "customize", "starlark", "success") }
	ns := env.Namespace(t)
	a := source(t, ns, "a", "1")
	source(t, ns, "b", "2")
	p := relatedBundle(t, ns, "p", "related-cache", "a")
	waitData(t, ns, "p-merged", "a", "1")
	for _, step := range []struct {
		what  string
		touch func()
		asks  float64 // customize calls it makes
		then  func()  // what the sync it brought must have done
	}{
		{"a related object changed", func() { env.Patch(t, a, `{"data":{"value":"changed"}}`) }, 0,
			func() { waitData(t, ns, "p-merged", "a", "changed") }},
		{"the child was deleted", func() { env.Delete(t, configMap(t, ns, "p-merged")) }, 0,
			func() { waitData(t, ns, "p-merged", "a", "changed") }},
		{"the parent's labels changed", func() { env.Patch(t, p, `{"metadata":{"labels":{"extra":"1"}}}`) }, 1, nil},
		{"the parent's annotations changed", func() { env.Patch(t, p, `{"metadata":{"annotations":{"extra":"1"}}}`) }, 1, nil},
		{"the parent's spec changed", func() { env.Patch(t, p, `{"spec":{"sources":["b"]}}`) }, 1,
			func() { waitData(t, ns, "p-merged", "b", "2") }},
		{"the controller was edited", func() {
			editController(t, cc.GetName(), func(cur *unstructured.Unstructured) {
				src, _, _ := unstructured.NestedString(cur.Object, "spec", "script", "starlark", "source")
				if err := unstructured.SetNestedField(cur.Object, src+"\n# edited\n", "spec", "script", "starlark", "source"); err != nil {
					t.Fatal(err)
				}
			})
		}, 1, nil},
	} {
		waitIdle(t, ctl)
		before := customizeCalls()
		actedOn(t, ctl, 1, step.touch)
		if step.then != nil {
			step.then()
		}
		waitIdle(t, ctl)
		if n := customizeCalls() - before; n != step.asks {
			t.Fatalf("%s: %v customize calls, want %v", step.what, n, step.asks)
		}
	}
}
