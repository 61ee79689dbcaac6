// Package mapbench measures a MapController with many inputs under one parent against a real
// kube-apiserver and etcd. Cold convergence: the engine starts with N inputs and one parent
// and makes the N outputs, next to a bare client-go program creating (and, apart, applying)
// the same N objects with the same client QPS, Burst and concurrency. Both are timed from their
// start until a watch of the test's own has seen their last object. Incremental: a change to
// one input must make exactly one map call (asserted: a count, not a time), and how long its
// output takes to be applied is reported (median and worst of several changes), from the
// update's response to the output's event at a watch of the test's own.
//
//	go test -run '^TestMapBench$' -v ./test/mapbench/ -inputs=1000   (make bench-map)
//
// Times are logged, never asserted. Without -inputs (or METASCRIPT_MAPBENCH=1) only
// TestMapBenchSmoke runs: the same at 20 inputs, so that it keeps working.
package mapbench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagInputs  = flag.Int("inputs", 1000, "inputs under the one parent (TestMapBench runs only when this flag or METASCRIPT_MAPBENCH is set)")
	flagChanges = flag.Int("changes", 20, "single-input changes whose latency is measured")
	flagWorkers = flag.Int("workers", 4, "engine workers, and goroutines of the bare client-go program")
	flagQPS     = flag.Float64("qps", 1000, "client QPS of the engine and of the bare client-go program")
	flagBurst   = flag.Int("burst", 2000, "client Burst of both")
	flagProfile = flag.String("cold-cpuprofile", "", "write a CPU profile of this process (the engine, and the test's watch of the outputs) from the engine's start to its last output to this file")
)

var (
	mirrors     = schema.GroupVersionResource{Group: "bench.metascript.dev", Version: "v1", Resource: "mirrors"}
	controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "mapcontrollers"}
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	// engineMetrics is shared by the engines of one test process: client-go's work queues
	// report to the first Metrics made.
	engineMetrics = sync.OnceValue(metrics.New)
)

type params struct {
	inputs, changes, workers int
	qps                      float64
	burst                    int
	profile                  string // a CPU profile of the cold start goes to this file
}

func TestMapBench(t *testing.T) {
	set := os.Getenv("METASCRIPT_MAPBENCH") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "inputs" })
	if !set {
		t.Skip("the map benchmark runs with -inputs=N or METASCRIPT_MAPBENCH=1 (make bench-map)")
	}
	bench(t, params{*flagInputs, *flagChanges, *flagWorkers, *flagQPS, *flagBurst, *flagProfile})
}

// TestMapBenchSmoke is the benchmark at 20 inputs, run with every test suite.
func TestMapBenchSmoke(t *testing.T) {
	bench(t, params{20, 3, 2, *flagQPS, *flagBurst, ""})
}

func bench(t *testing.T, p params) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(controlplane.Options{CRDDirs: []string{
		filepath.Join(root, "manifests", "crds"), filepath.Join("testdata", "crds")}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	admin := dynamic.NewForConfigOrDie(cp.Config)
	limited := rest.CopyConfig(cp.Config)
	limited.QPS, limited.Burst = float32(p.qps), p.burst
	t.Logf("map: %d inputs under one parent; %d workers, client QPS %g, Burst %d", p.inputs, p.workers, p.qps, p.burst)

	for _, ns := range []string{"baseline", "engine"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The engine's outputs are owned by their parent: the bare program's are owned too (by an
	// object of its own; the control plane runs no garbage collector), so that both write the
	// same objects.
	owner, err := kube.CoreV1().ConfigMaps("baseline").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	ownerRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}
	// The bare program is timed as the engine is: from its start until the test's watch has
	// seen its last object (and so with the watch's cost on the same cores).
	bareOutputs := watchOutputs(t, ctx, kube, "baseline")
	bareStart := time.Now()
	bare, err := enginetest.CreateConfigMaps(ctx, limited, p.workers, p.inputs, func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: inputName(i) + "-out", Namespace: "baseline",
			Labels: map[string]string{"role": "output"}, OwnerReferences: []metav1.OwnerReference{ownerRef}},
			Data: map[string]string{"value": "0"}}
	})
	if err != nil {
		t.Fatalf("bare client-go: %v", err)
	}
	_, last := bareOutputs.waitCount(t, ctx, p.inputs)
	bareSeen := last.Sub(bareStart)
	applyStart := time.Now()
	bareApply, err := enginetest.BareWrites(ctx, limited, p.workers, p.inputs, func(ctx context.Context, c kubernetes.Interface, i int) error {
		cm := applycorev1.ConfigMap(inputName(i)+"-applied", "baseline").WithLabels(map[string]string{"role": "output"}).
			WithData(map[string]string{"value": "0"}).WithOwnerReferences(applymetav1.OwnerReference().
			WithAPIVersion(ownerRef.APIVersion).WithKind(ownerRef.Kind).WithName(ownerRef.Name).WithUID(ownerRef.UID).
			WithController(true).WithBlockOwnerDeletion(true))
		_, err := c.CoreV1().ConfigMaps("baseline").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "baseline", Force: true})
		return err
	})
	if err != nil {
		t.Fatalf("bare client-go, server-side apply: %v", err)
	}
	_, last = bareOutputs.waitCount(t, ctx, 2*p.inputs)
	bareApplySeen := last.Sub(applyStart)
	if _, err := enginetest.CreateConfigMaps(ctx, cp.Config, p.workers, p.inputs, func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: inputName(i), Namespace: "engine",
			Labels: map[string]string{"role": "input"}}, Data: map[string]string{"value": "0"}}
	}); err != nil {
		t.Fatalf("creating the inputs: %v", err)
	}
	mc := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "controller.yaml"))[0]
	if _, err := admin.Resource(controllers).Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.metascript.dev/v1", "kind": "Mirror",
		"metadata": map[string]any{"name": "mirror", "namespace": "engine"},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"role": "input"}}},
	}}
	if _, err := admin.Resource(mirrors).Namespace("engine").Create(ctx, parent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	outputs := watchOutputs(t, ctx, kube, "engine")
	if err := enginetest.WarmWatchCaches(ctx, admin, mirrors, configMaps); err != nil {
		t.Fatal(err)
	}

	eng, err := engine.New(engine.Options{
		Config:         limited,
		Workers:        p.workers,
		CacheSize:      128,
		Defaults:       scripting.Budget{Timeout: 2 * time.Second},
		StatusInterval: 10 * time.Second,
		Log:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics:        engineMetrics(),
	})
	if err != nil {
		t.Fatal(err)
	}
	engineCtx, stopEngine := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	if p.profile != "" {
		f, err := os.Create(p.profile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile() // should the test fail first; a second stop does nothing
	}
	start := time.Now()
	go func() { stopped <- eng.Run(engineCtx) }()
	defer func() { stopEngine(); <-stopped }()
	var ready time.Duration
	go func() {
		for !eng.Ready() && engineCtx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		ready = time.Since(start)
	}()
	first, last := outputs.waitCount(t, ctx, p.inputs)
	if p.profile != "" {
		pprof.StopCPUProfile()
	}
	took := last.Sub(start)
	t.Logf("  bare client-go, create (%d goroutines): %7.2fs   (its last response after %.2fs)", p.workers, bareSeen.Seconds(), bare.Seconds())
	t.Logf("  bare client-go, server-side apply:     %7.2fs   (its last response after %.2fs)", bareApplySeen.Seconds(), bareApply.Seconds())
	t.Logf("  engine, cold start to %d outputs:    %7.2fs   (first output after %.2fs; from first to last %.2fs)",
		p.inputs, took.Seconds(), first.Sub(start).Seconds(), last.Sub(first).Seconds())
	t.Logf("  engine ready (controller started, caches synced) after %.2fs", ready.Seconds())
	t.Logf("  ratio engine / bare client-go create:  %7.2f    (goal ≤ 1.2)", took.Seconds()/bareSeen.Seconds())
	t.Logf("  ratio engine / bare client-go apply:   %7.2f", took.Seconds()/bareApplySeen.Seconds())

	// Incremental: one input at a time; let the engine settle between changes.
	time.Sleep(2 * time.Second)
	calls := func() float64 {
		return testutil.ToFloat64(engineMetrics().HookInvocations.WithLabelValues("mapcontroller/mirror", "map", "starlark", "success"))
	}
	var latencies []time.Duration
	for c := range p.changes {
		name := inputName((c * 37) % p.inputs)
		value := fmt.Sprint(c + 1)
		before := calls()
		cm, err := kube.CoreV1().ConfigMaps("engine").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["value"] = value
		if _, err := kube.CoreV1().ConfigMaps("engine").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		at := outputs.waitValue(t, ctx, name+"-out", value)
		latencies = append(latencies, at.Sub(sent))
		time.Sleep(300 * time.Millisecond) // the events of the output's write come back
		if n := calls() - before; n != 1 {
			t.Errorf("change %d of input %s made %v map calls, want exactly 1", c, name, n)
		}
	}
	slices.Sort(latencies)
	t.Logf("  one input changed → its output applied (%d changes): median %v, worst %v (goal: median ≤ 50ms)",
		len(latencies), latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
}

func inputName(i int) string { return fmt.Sprintf("input-%05d", i) }

// outputWatch follows the outputs (ConfigMaps labelled role=output) of a namespace.
type outputWatch struct {
	mu      sync.Mutex
	changed *sync.Cond
	values  map[string]string
	seen    map[string]time.Time // when each name last got its value
	first   time.Time            // when the first name appeared
	last    time.Time            // when the newest name first appeared
}

func watchOutputs(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns string) *outputWatch {
	t.Helper()
	w := &outputWatch{values: map[string]string{}, seen: map[string]time.Time{}}
	w.changed = sync.NewCond(&w.mu)
	lw := cache.NewFilteredListWatchFromClient(kube.CoreV1().RESTClient(), "configmaps", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = "role=output" })
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	on := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, known := w.values[cm.Name]; !known {
			if w.first.IsZero() {
				w.first = now
			}
			w.last = now
		}
		if w.values[cm.Name] != cm.Data["value"] {
			w.values[cm.Name], w.seen[cm.Name] = cm.Data["value"], now
		}
		w.changed.Broadcast()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, o any) { on(o) }}); err != nil {
		t.Fatal(err)
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("output watch did not sync")
	}
	go func() { <-ctx.Done(); w.mu.Lock(); w.changed.Broadcast(); w.mu.Unlock() }()
	return w
}

// waitCount waits until n outputs exist and returns when the first and the last appeared.
func (w *outputWatch) waitCount(t *testing.T, ctx context.Context, n int) (first, last time.Time) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.values) < n {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d outputs after the deadline", len(w.values), n)
		}
		w.changed.Wait()
	}
	return w.first, w.last
}

// waitValue waits until output name holds value and returns when it got it.
func (w *outputWatch) waitValue(t *testing.T, ctx context.Context, name, value string) time.Time {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.values[name] != value {
		if ctx.Err() != nil {
			t.Fatalf("output %s = %q after the deadline, want %q", name, w.values[name], value)
		}
		w.changed.Wait()
	}
	return w.seen[name]
}
