package integration

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
)

// TestNoWritesAtSteadyState: once converged, re-syncing every parent sends no write.
func TestNoWritesAtSteadyState(t *testing.T) {
	// The Bundle controller of the other tests, on parents of this test only.
	controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-steady", "suite: basic", "suite: steady")
	const ctl = "compositecontroller/bundle-steady"
	ns := env.Namespace(t)
	var parents []*unstructured.Unstructured
	for i := range 5 {
		parents = append(parents, bundle(t, ns, fmt.Sprintf("s%d", i), "steady", fmt.Sprintf("s%d", i), "a=1", "b=2"))
	}
	for i := range parents {
		waitValue(t, ns, fmt.Sprintf("s%d-b", i), "2")
		enginetest.Eventually(t, wait, func() (bool, string) {
			p := getBundle(t, ns, fmt.Sprintf("s%d", i))
			n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
			return n == 2, "status not converged"
		})
	}
	waitCounts(t, "CompositeController", "bundle-steady", 5, 10)
	waitIdle(t, ctl)
	env.Requests.Reset()
	// An annotation change re-syncs each parent without changing what its hook returns.
	actedOn(t, ctl, len(parents), func() {
		for _, p := range parents {
			env.Patch(t, p, `{"metadata":{"annotations":{"resync":"now"}}}`)
		}
	})
	if w := env.Requests.Writes(); w != 0 {
		t.Fatalf("engine sent %d writes re-syncing converged parents (by verb: %v, writes by resource: %v)", w, env.Requests.Counts(), env.Requests.WritesByResource())
	}
}

// TestNormalisedQuantitiesCostNothing: a child whose quantities the API server stored in
// another form than the hook wrote them is up to date: re-syncing sends nothing.
func TestNormalisedQuantitiesCostNothing(t *testing.T) {
	controller(t, "quota.yaml")
	const ctl = "compositecontroller/quota"
	ns := env.Namespace(t)
	b := bundle(t, ns, "q", "quota", "q")
	enginetest.Eventually(t, wait, func() (bool, string) {
		q := env.Get(t, "v1", "ResourceQuota", ns, "q")
		if q == nil {
			return false, "no ResourceQuota yet"
		}
		cpu, _, _ := unstructured.NestedString(q.Object, "spec", "hard", "cpu")
		return cpu == "1", fmt.Sprintf("spec.hard.cpu = %q, want the server's form \"1\"", cpu)
	})
	waitCounts(t, "CompositeController", "quota", 1, 1)
	waitIdle(t, ctl)
	env.Requests.Reset()
	actedOn(t, ctl, 1, func() { env.Patch(t, b, `{"metadata":{"annotations":{"resync":"now"}}}`) })
	if w := env.Requests.Writes(); w != 0 {
		t.Fatalf("engine sent %d writes re-syncing a converged parent (by verb: %v, writes by resource: %v)", w, env.Requests.Counts(), env.Requests.WritesByResource())
	}
}

// TestConvergenceAtTheRequestFloor: a parent whose status counts its observed children is
// converged with one write per child and one status write, although its children reach the
// cache after its first reconcile: the reconcile decides again from what its writes stored,
// and nothing the echoes of its own writes bring writes again. (That echoes start no
// reconcile at all is TestEchoesStartNoReconcile's.)
func TestConvergenceAtTheRequestFloor(t *testing.T) {
	// The Bundle controller of the other tests, on parents of this test only.
	cc := controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-floor", "suite: basic", "suite: floor")
	const ctl = "compositecontroller/bundle-floor"
	waitControllerReady(t, "CompositeController", cc.GetName())
	ns := env.Namespace(t)
	waitIdle(t, ctl)
	env.Requests.Reset()
	b := bundle(t, ns, "floor", "floor", "floor", "a=1", "b=2", "c=3")
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "floor")
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
		return n == 3, fmt.Sprintf("status %v", p.Object["status"])
	})
	// A later event of the parent, reconciled: the echoes of the writes above came first on
	// the parent's watch, so any reconcile they started has run by the time this one is done.
	actedOn(t, ctl, 1, func() { env.Patch(t, b, `{"metadata":{"annotations":{"barrier":"now"}}}`) })
	w := env.Requests.WritesByResource()
	if w["configmaps"] != 3 || w["bundles/status"] != 1 || w["bundles"] != 0 {
		t.Fatalf("engine's writes converging a parent with 3 children: %v; want 3 configmaps and 1 bundles/status", w)
	}
}

// TestEchoesStartNoReconcile: docs/performance.md promises that "an event that only reports
// the engine's own write does not reconcile the parent again". Each of 5 new parents with 3
// children converges in one reconcile (TestConvergenceAtTheRequestFloor), and a later event
// of each parent takes one more: 10 in all, none for the echoes of the children's creates or
// of the status writes.
//
// The echoes race the writes' answers and the reconciles that read the cache they update
// (engine/reconcile/overlay.go); before the overlay held events of writes in flight and let
// only echoes end its entries, this took 15.
func TestEchoesStartNoReconcile(t *testing.T) {
	cc := controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-echoes", "suite: basic", "suite: echoes")
	const ctl = "compositecontroller/bundle-echoes"
	waitControllerReady(t, "CompositeController", cc.GetName())
	ns := env.Namespace(t)
	waitIdle(t, ctl)
	reconciled := reconciles(ctl, "success")
	var parents []*unstructured.Unstructured
	for i := range 5 {
		parents = append(parents, bundle(t, ns, fmt.Sprintf("e%d", i), "echoes", fmt.Sprintf("e%d", i), "a=1", "b=2", "c=3"))
	}
	for i := range parents {
		enginetest.Eventually(t, wait, func() (bool, string) {
			p := getBundle(t, ns, fmt.Sprintf("e%d", i))
			n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
			return n == 3, fmt.Sprintf("status %v", p.Object["status"])
		})
	}
	// Later events of the parents, reconciled: the echoes came first on the parents' watch.
	actedOn(t, ctl, len(parents), func() {
		for _, p := range parents {
			env.Patch(t, p, `{"metadata":{"annotations":{"barrier":"now"}}}`)
		}
	})
	if n := reconciles(ctl, "success") - reconciled; n != float64(2*len(parents)) {
		t.Fatalf("%v reconciles of %d parents, want %d: one converging each, one for its later event; "+
			"the rest were started by echoes of the engine's own writes", n, len(parents), 2*len(parents))
	}
}
