// Package converge measures how fast the engine converges N parents × M children from a cold
// start against a real kube-apiserver and etcd, next to a bare client-go program creating the
// same objects with the same client QPS, Burst and concurrency; then how many API requests a
// full resync of every converged parent costs.
//
//	go test -run '^TestConverge$' -v ./test/converge/ -parents=200 -children=5   (make bench-converge)
//
// Timings are logged, never asserted. Without -parents (or METASCRIPT_CONVERGE=1) only
// TestConvergeSmoke runs: the same measurement at 5 × 2, so that it keeps working.
package converge

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagParents  = flag.Int("parents", 200, "parents to converge (TestConverge runs only when this flag or METASCRIPT_CONVERGE is set)")
	flagChildren = flag.Int("children", 5, "ConfigMap children per parent")
	flagWorkers  = flag.Int("workers", 4, "engine workers, and goroutines of the bare client-go program")
	flagQPS      = flag.Float64("qps", 50, "client QPS of the engine and of the bare client-go program (metascript run's default)")
	flagBurst    = flag.Int("burst", 100, "client Burst of both (metascript run's default)")
	flagStatus   = flag.Bool("status", false, "run only the variant whose hook also returns the parent's status (true: one status write per parent, which the baseline does not make) or only the one that returns children alone (false); both run when the flag is not given")
)

var (
	fanouts     = enginetest.Fanouts
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
	// engineMetrics is shared by the engines of one test process: client-go's work queues
	// report to the first Metrics made.
	engineMetrics = sync.OnceValue(metrics.New)
)

type params struct {
	parents, children, workers int
	qps                        float64
	burst                      int
	status                     bool
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// TestConverge runs the benchmark twice by default: with a hook that returns the children
// alone (like for like with the baseline, which creates the same children) and with one that
// also returns the parent's status (one more write per parent).
func TestConverge(t *testing.T) {
	set := os.Getenv("METASCRIPT_CONVERGE") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "parents" })
	if !set {
		t.Skip("the full convergence benchmark runs with -parents=N or METASCRIPT_CONVERGE=1 (make bench-converge)")
	}
	statuses := []bool{false, true}
	if flagSet("status") {
		statuses = []bool{*flagStatus}
	}
	for _, status := range statuses {
		name := "children"
		if status {
			name = "children+status"
		}
		t.Run(name, func(t *testing.T) {
			converge(t, "fanout", params{*flagParents, *flagChildren, *flagWorkers, *flagQPS, *flagBurst, status})
		})
	}
}

// TestConvergeSmoke is the benchmark at 5 × 2, run with every test suite.
func TestConvergeSmoke(t *testing.T) {
	converge(t, "fanout-smoke", params{5, 2, 2, *flagQPS, *flagBurst, true})
}

func converge(t *testing.T, controller string, p params) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(controlplane.Options{CRDDirs: []string{
		filepath.Join(root, "manifests", "crds"), enginetest.FanoutCRDs(root)}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	admin := dynamic.NewForConfigOrDie(cp.Config)
	limited := rest.CopyConfig(cp.Config)
	limited.QPS, limited.Burst = float32(p.qps), p.burst

	t.Logf("converge: %d parents × %d children = %d ConfigMaps; %d workers, client QPS %g, Burst %d",
		p.parents, p.children, p.parents*p.children, p.workers, p.qps, p.burst)

	createNamespace(t, admin, "baseline")
	bare, err := bareClientGo(ctx, limited, "baseline", p.parents, p.children, p.workers, false, false)
	if err != nil {
		t.Fatalf("bare client-go: %v", err)
	}
	createNamespace(t, admin, "baseline-apply")
	bareApply, err := bareClientGo(ctx, limited, "baseline-apply", p.parents, p.children, p.workers, true, false)
	if err != nil {
		t.Fatalf("bare client-go, server-side apply: %v", err)
	}
	// Like for like with a hook that returns status: the same creates, and one status write
	// per parent.
	var bareStatus time.Duration
	if p.status {
		createNamespace(t, admin, "baseline-status")
		createParents(t, ctx, admin, "baseline-status", p)
		if bareStatus, err = bareClientGo(ctx, limited, "baseline-status", p.parents, p.children, p.workers, false, true); err != nil {
			t.Fatalf("bare client-go, with status writes: %v", err)
		}
		// The engine would reconcile these parents too (and adopt their children).
		if err := admin.Resource(fanouts).Namespace("baseline-status").DeleteCollection(ctx,
			metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The engine starts cold: the controller and every parent exist, nothing is cached, no
	// child exists yet.
	createNamespace(t, admin, "engine")
	cc := controllerObject(t, controller, p.status)
	if _, err := admin.Resource(controllers).Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	uids := createParents(t, ctx, admin, "engine", p)
	watch := watchConvergence(t, ctx, cp.Config, "engine", uids, p.children, p.status)

	counter := &requestCounter{}
	cfg := rest.CopyConfig(limited)
	cfg.Wrap(counter.wrap)
	eng, err := engine.New(engine.Options{
		Config:         cfg,
		Workers:        p.workers,
		CacheSize:      128,
		Defaults:       scripting.Budget{Timeout: 2 * time.Second},
		StatusInterval: 10 * time.Second, // metascript run's default
		Log:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics:        engineMetrics(),
	})
	if err != nil {
		t.Fatal(err)
	}
	engineCtx, stopEngine := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- eng.Run(engineCtx) }()
	defer func() { stopEngine(); <-stopped }()
	select {
	case <-watch.done:
	case <-ctx.Done():
		t.Fatalf("the engine did not converge: %v", ctx.Err())
	}
	first, last := watch.times()
	took := last.Sub(start)
	convergeCounts := counter.snapshot()
	total, byVerb, _ := summary(convergeCounts, func(string) bool { return true })

	t.Logf("  bare client-go, create (%d goroutines):  %7.2fs", p.workers, bare.Seconds())
	t.Logf("  bare client-go, server-side apply:      %7.2fs", bareApply.Seconds())
	t.Logf("  engine, cold start to converged:        %7.2fs   (first child after %.2fs; %d requests: %s)",
		took.Seconds(), first.Sub(start).Seconds(), total, formatVerbs(byVerb))
	t.Logf("  ratio engine / bare client-go create:   %7.2f    (target ≤ 1.2)", took.Seconds()/bare.Seconds())
	t.Logf("  ratio engine / bare client-go apply:    %7.2f", took.Seconds()/bareApply.Seconds())
	if p.status {
		t.Logf("  bare client-go, create and status:      %7.2fs (one status write per parent, as the engine makes)", bareStatus.Seconds())
		t.Logf("  ratio engine / bare create and status:  %7.2f", took.Seconds()/bareStatus.Seconds())
	}
	t.Logf("  client rate-limit floor: engine's %d requests %6.2fs, the baseline's %d %6.2fs ((requests − Burst) / QPS)",
		total, floor(total, p), p.parents*p.children, floor(p.parents*p.children, p))
	t.Logf("  engine requests while converging:\n%s", format(convergeCounts, "    "))

	// Steady state: once nothing is queued, editing the hook recompiles it and re-syncs every
	// parent; the parents and children are already as the hook wants them.
	settle(t, ctx, controller, counter)
	counter.reset()
	before := reconciles(t, controller)
	generation := editHook(t, ctx, admin, controller)
	waitResynced(t, ctx, admin, controller, generation, before+float64(p.parents))
	settle(t, ctx, controller, counter)
	resync := counter.snapshot()
	total, byVerb, writes := summary(resync, func(resource string) bool { return resource != "compositecontrollers/status" })
	t.Logf("steady state: full resync of %d parents (hook source edited; %v reconciles)", p.parents, reconciles(t, controller)-before)
	t.Logf("  requests: %d, per parent %.3f (%s)", total, float64(total)/float64(p.parents), formatVerbs(byVerb))
	t.Logf("  writes to parents, children and events: %d (target 0)", writes)
	if len(resync) > 0 {
		t.Logf("  by resource:\n%s", format(resync, "    "))
	}
	if writes != 0 {
		t.Errorf("a resync of %d converged parents made %d writes, want 0:\n%s", p.parents, writes, format(resync, "  "))
	}
}

// floor is the least time client-go's token bucket lets requests take at p's QPS and Burst.
func floor(requests int, p params) float64 {
	return max(0, float64(requests-p.burst)) / p.qps
}

func createNamespace(t *testing.T, c dynamic.Interface, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name}}}
	if _, err := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
		Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// controllerObject is testdata/controller.yaml named name; without status, its hook returns
// the children alone.
func controllerObject(t *testing.T, name string, status bool) *unstructured.Unstructured {
	t.Helper()
	cc := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "controller.yaml"))[0]
	cc.SetName(name)
	if !status {
		src, _, _ := unstructured.NestedString(cc.Object, "spec", "hooks", "sync", "starlark", "source")
		const withStatus = `return {"status": {"children": len(children)}, "children": children}`
		if !strings.Contains(src, withStatus) {
			t.Fatal("testdata/controller.yaml changed: its return statement is not the one -status=false rewrites")
		}
		src = strings.Replace(src, withStatus, `return {"children": children}`, 1)
		if err := unstructured.SetNestedField(cc.Object, src, "spec", "hooks", "sync", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
	}
	return cc
}

// createParents creates the parents with p.workers goroutines and returns their UIDs by name.
func createParents(t *testing.T, ctx context.Context, c dynamic.Interface, ns string, p params) map[types.UID]string {
	t.Helper()
	var mu sync.Mutex
	uids := map[types.UID]string{}
	err := enginetest.Parallel(ctx, p.workers, p.parents, func(ctx context.Context, i int) error {
		out, err := c.Resource(fanouts).Namespace(ns).Create(ctx, enginetest.Fanout(parentName(i), p.children), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		uids[out.GetUID()] = out.GetName()
		return nil
	})
	if err != nil {
		t.Fatalf("creating parents: %v", err)
	}
	return uids
}

// settle waits until the controller's work queue is empty and the engine has sent no request
// for half a second.
func settle(t *testing.T, ctx context.Context, controller string, counter *requestCounter) {
	t.Helper()
	last, quietSince := -1, time.Now()
	for {
		total, _, _ := summary(counter.snapshot(), func(string) bool { return true })
		if total != last {
			last, quietSince = total, time.Now()
		}
		if engineMetrics().QueueDepth("compositecontroller/"+controller) == 0 && time.Since(quietSince) > 500*time.Millisecond {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the engine did not settle: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// editHook appends a comment to the sync hook's source: a new generation that the engine
// recompiles, and then re-syncs every parent with. It returns the new generation.
func editHook(t *testing.T, ctx context.Context, c dynamic.Interface, name string) int64 {
	t.Helper()
	var generation int64
	// The engine writes the controller's status meanwhile: retry on a stale resourceVersion.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cc, err := c.Resource(controllers).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		src, _, _ := unstructured.NestedString(cc.Object, "spec", "hooks", "sync", "starlark", "source")
		if err := unstructured.SetNestedField(cc.Object, src+"# resync\n", "spec", "hooks", "sync", "starlark", "source"); err != nil {
			return err
		}
		out, err := c.Resource(controllers).Update(ctx, cc, metav1.UpdateOptions{})
		if err == nil {
			generation = out.GetGeneration()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return generation
}

// waitResynced waits until the controller reports generation and at least want successful
// reconciles have been counted.
func waitResynced(t *testing.T, ctx context.Context, c dynamic.Interface, name string, generation int64, want float64) {
	t.Helper()
	for {
		cc, err := c.Resource(controllers).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, _, _ := unstructured.NestedInt64(cc.Object, "status", "observedGeneration")
		if g == generation && reconciles(t, name) >= want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the parents were not re-synced: observedGeneration %d (want %d), reconciles %v (want %v)",
				g, generation, reconciles(t, name), want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reconciles is the engine's count of successful reconciles of the controller.
func reconciles(t *testing.T, controller string) float64 {
	t.Helper()
	var m dto.Metric
	if err := engineMetrics().Reconciles.WithLabelValues("compositecontroller/"+controller, "success").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
