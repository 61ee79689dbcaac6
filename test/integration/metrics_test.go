package integration

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsRecordReconcilesAndHooks: once a parent converged, the engine's registry counts
// its reconcile, hook call and child creation, and registers the duration, work queue and
// compile cache metrics.
func TestMetricsRecordReconcilesAndHooks(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	bundle(t, ns, "m", "basic", "m", "a=1")
	waitValue(t, ns, "m-a", "1")
	m := env.Engine.Metrics
	if n := testutil.ToFloat64(m.Reconciles.WithLabelValues("compositecontroller/bundle-starlark", "success")); n < 1 {
		t.Fatalf("metascript_reconciles_total{result=success} = %v", n)
	}
	if n := testutil.ToFloat64(m.HookInvocations.WithLabelValues("compositecontroller/bundle-starlark", "sync", "starlark", "success")); n < 1 {
		t.Fatalf("metascript_hook_invocations_total = %v", n)
	}
	if n := testutil.ToFloat64(m.ChildOperations.WithLabelValues("compositecontroller/bundle-starlark", "create")); n < 1 {
		t.Fatalf("metascript_child_operations_total{operation=create} = %v", n)
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	for _, want := range []string{"metascript_reconcile_duration_seconds", "metascript_hook_duration_seconds",
		"metascript_workqueue_depth", "metascript_compile_cache_misses_total", "metascript_compile_cache_entries"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("metric %s not registered; have %v", want, names)
		}
	}
}
