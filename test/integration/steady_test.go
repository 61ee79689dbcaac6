package integration

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
)

// TestNoWritesAtSteadyState: once converged, re-syncing every parent sends no write.
func TestNoWritesAtSteadyState(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	var parents []*unstructured.Unstructured
	for i := range 5 {
		parents = append(parents, bundle(t, ns, fmt.Sprintf("s%d", i), "basic", fmt.Sprintf("s%d", i), "a=1", "b=2"))
	}
	for i := range parents {
		waitValue(t, ns, fmt.Sprintf("s%d-b", i), "2")
		enginetest.Eventually(t, wait, func() (bool, string) {
			p := getBundle(t, ns, fmt.Sprintf("s%d", i))
			n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
			return n == 2, "status not converged"
		})
	}
	time.Sleep(time.Second)
	env.Requests.Reset()
	// A label change re-syncs each parent without changing what its hook returns.
	for _, p := range parents {
		env.Patch(t, p, `{"metadata":{"annotations":{"resync":"now"}}}`)
	}
	time.Sleep(2 * time.Second)
	if w := env.Requests.Writes(); w != 0 {
		t.Fatalf("engine sent %d writes re-syncing converged parents (requests by verb: %v)", w, env.Requests.Counts())
	}
}

// TestNormalisedQuantitiesCostNothing: a child whose quantities the API server stored in
// another form than the hook wrote them is up to date: re-syncing sends nothing.
func TestNormalisedQuantitiesCostNothing(t *testing.T) {
	controller(t, "quota.yaml")
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
	time.Sleep(time.Second)
	env.Requests.Reset()
	env.Patch(t, b, `{"metadata":{"annotations":{"resync":"now"}}}`)
	time.Sleep(2 * time.Second)
	if w := env.Requests.Writes(); w != 0 {
		t.Fatalf("engine sent %d writes re-syncing a converged parent (requests by verb: %v)", w, env.Requests.Counts())
	}
}
