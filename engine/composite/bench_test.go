package composite_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
)

var (
	fanouts = resources.Resource{GVR: schema.GroupVersionResource{Group: "bench.metascript.dev", Version: "v1", Resource: "fanouts"},
		GVK: schema.GroupVersionKind{Group: "bench.metascript.dev", Version: "v1", Kind: "Fanout"}, Namespaced: true, HasStatus: true}
	configMaps = resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
)

// The fake API server never ends a watch's initial events with a bookmark: informers list
// and then watch.
func init() { os.Setenv("KUBE_FEATURE_WatchListClient", "false") }

// BenchmarkNoopSync measures what one no-op sync of a converged parent costs the engine: a
// resync of every parent (as resyncPeriodSeconds makes one), each with 5 ConfigMaps the
// Starlark hook of the scale benchmark's controller already has as it wants them. The
// parents and children live in a fake API server, so the figure is the engine's alone:
// queue, gather, hook call, validation, the up-to-date check of each child and of the
// status. It reports ns per parent sync; one worker, so CPU and wall time agree.
func BenchmarkNoopSync(b *testing.B) {
	const parents, children = 200, 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fanouts.GVR: "FanoutList", configMaps.GVR: "ConfigMapList"})
	// The fake API server leaves metadata.uid and resourceVersion to its caller; the engine
	// relies on them.
	var uids atomic.Int64
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if u, ok := action.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured); ok && u.GetUID() == "" {
			n := uids.Add(1)
			u.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
			u.SetResourceVersion(fmt.Sprint(n))
		}
		return false, nil, nil
	})
	m := metrics.New()
	runner := fanoutRunner(b, client, m)
	if err := runner.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer runner.Stop()
	// One parent at a time: the fake API server's watches hold only 100 events.
	for i := range parents {
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bench.metascript.dev/v1", "kind": "Fanout",
			"metadata": map[string]any{"name": fmt.Sprintf("p%d", i), "namespace": "bench",
				"generation": int64(1)},
			"spec": map[string]any{"children": int64(children),
				"selector": map[string]any{"matchLabels": map[string]any{"parent": fmt.Sprintf("p%d", i)}}},
		}}
		if _, err := client.Resource(fanouts.GVR).Namespace("bench").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitFor(b, func() bool { _, n := runner.Counts(); return n == (i+1)*children })
	}
	reconciles := func() float64 {
		return testutil.ToFloat64(m.Reconciles.WithLabelValues("compositecontroller/scale", "success"))
	}
	// Converged once no reconcile happens for a while.
	for last := -1.0; last != reconciles(); time.Sleep(200 * time.Millisecond) {
		last = reconciles()
	}
	cpu, allocated := processCPU(b), processAllocated()
	b.ResetTimer()
	for b.Loop() {
		want := reconciles() + parents
		runner.Resync()
		waitFor(b, func() bool { return reconciles() >= want })
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*parents), "ns/sync")
	b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N*parents), "cpu-ns/sync")
	b.ReportMetric(float64(processAllocated()-allocated)/float64(b.N*parents), "B/sync")
	if errs := testutil.ToFloat64(m.Reconciles.WithLabelValues("compositecontroller/scale", "error")); errs > 0 {
		b.Fatalf("%v reconciles failed", errs)
	}
}

func fanoutRunner(b *testing.B, client *dynamicfake.FakeDynamicClient, m *metrics.Metrics) *reconcile.Runner {
	raw, err := os.ReadFile("testdata/fanout-controller.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		b.Fatal(err)
	}
	decl, err := composite.Descriptor.Read(func(into any) error { return yaml.Unmarshal(raw, into) })
	if err != nil {
		b.Fatal(err)
	}
	rt := engine.NewRuntime(scripting.Options{})
	sync, err := hooks.Build(context.Background(), hooks.Spec{Controller: "compositecontroller/scale", Hook: "sync",
		Def: decl.Hooks["sync"], ResponseFields: composite.Descriptor.Primary().Response}, rt, nil)
	if err != nil {
		b.Fatal(err)
	}
	runner, err := composite.Descriptor.Configure(&reconcile.Built{Declared: decl, Descriptor: composite.Descriptor, Object: obj,
		Resources: []resources.Resource{fanouts, configMaps}, Hooks: map[string]hooks.Invoker{"sync": sync}},
		reconcile.Env{Client: client, Informers: informers.NewFactory(client), Recorder: record.NewFakeRecorder(1000),
			Metrics: m, Workers: 1, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		b.Fatal(err)
	}
	return runner
}

// processCPU is the CPU time the process has used, user and system, on every core: the
// benchmark's own polling is small next to the engine's work and its garbage collection.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processAllocated is the bytes the process has allocated so far; unlike times, the bytes a
// sync allocates do not vary with the machine's load.
func processAllocated() uint64 {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func waitFor(b *testing.B, done func() bool) {
	for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("timed out")
		}
	}
}
