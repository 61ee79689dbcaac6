// Package neighbors measures how much hostile neighbours slow a healthy controller that runs
// beside them in the same engine, against a real kube-apiserver and etcd.
//
//	make bench-neighbors PARENTS=200 CHILDREN=3
//	go test -count=1 -run '^TestNeighbors$' -v ./test/neighbors/ -parents=200 -children=3 -noisy=50 -runs=3 [-burn=30s] [-qps=50 -burst=100] [-pprof=DIR]
//
// The healthy controller (testdata/healthy.yaml) converges PARENTS Fanouts × CHILDREN
// ConfigMaps: the time from creating the first parent to every child present and every
// parent's status written. It does so alone, then beside each set of hostile neighbours
// (testdata/noisy.yaml), each a tenant of its own, on NOISY parents they reconcile again every
// 5 s: two hooks (Starlark and JavaScript) that burn their whole budget, four webhooks that
// never answer, and a hook that answers a 40 MiB child. The engine's hook and webhook
// ceilings are -burn, and the burners and webhooks ask for more, so every call of theirs
// holds what it holds for that long. The rounds interleave (alone, beside each set, and
// again), so that a drift of the machine affects every configuration alike. The engine runs
// in-process with metascript run's defaults (workers, shared reconcile seats, hook-call
// bound, hook budgets, client QPS), or with -qps and -burst a faster client, with which the
// healthy controller is bound by CPU.
//
// Numbers are logged, never asserted. Without -parents (or METASCRIPT_NEIGHBORS=1) only
// TestNeighborsSmoke runs: one small round with a short -burn, which checks that every
// controller does what it should (the healthy one converges, every neighbour fails as it
// should and writes nothing).
package neighbors

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagParents  = flag.Int("parents", 200, "the healthy controller's parents (TestNeighbors runs only when this flag or METASCRIPT_NEIGHBORS is set)")
	flagChildren = flag.Int("children", 3, "ConfigMap children per healthy parent")
	flagNoisy    = flag.Int("noisy", 50, "the noisy controller's parents")
	flagRuns     = flag.Int("runs", 3, "rounds: each configuration is measured once per round")
	flagQPS      = flag.Float64("qps", 50, "the engine's client QPS (metascript run's default); at 50 the healthy controller's writes are bound by it, not by CPU")
	flagBurst    = flag.Int("burst", 100, "the engine's client Burst (metascript run's default)")
	flagPprof    = flag.String("pprof", "", "directory for a CPU profile of the engine's process during each configuration's first run")
	flagMemory   = flag.String("memory-limit", "900Mi", "the Go runtime's soft memory limit of the process, as metascript run sets it in the chart's 1Gi pod (90%); the peak RSS of each configuration is reported against it")
	flagOnly     = flag.String("only", "", "measure only the configurations whose names hold this (and alone)")
	flagBurn     = flag.Duration("burn", 30*time.Second, "the engine's hook and webhook timeout ceilings: how long each call of a burner or a hung webhook holds on")
)

var (
	burners     = schema.GroupVersionResource{Group: "bench.metascript.dev", Version: "v1", Resource: "burners"}
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
)

const healthy = "healthy"

// engineOptions are metascript run's defaults (cmd/metascript/run.go and flags.go),
// but for the client's QPS and Burst and the timeout ceilings, p's.
func engineOptions(cfg *rest.Config, m *metrics.Metrics, p params) engine.Options {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(p.qps), p.burst
	return engine.Options{
		Config:         cfg,
		Workers:        4,
		MaxReconciles:  16,
		MaxHookCalls:   8,
		CacheSize:      512,
		Defaults:       scripting.Budget{Timeout: 2 * time.Second, MaxSteps: 10_000_000, MaxStackDepth: 200, MaxMemory: 64 << 20},
		Ceilings:       scripting.Budget{Timeout: p.burn, MaxSteps: 1_000_000_000, MaxStackDepth: 1000, MaxMemory: 512 << 20},
		WebhookCeiling: p.burn,
		MaxAnswerBytes: 16 << 20,
		AnswerMemory:   256 << 20,
		StatusInterval: 10 * time.Second,
		Log:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Metrics:        m,
	}
}

type params struct {
	parents, children, noisy, runs int
	pprofDir                       string
	timeout                        time.Duration // of the whole run
	qps                            float64
	burst                          int
	burn                           time.Duration // the hook and webhook timeout ceilings
	memoryLimit                    int64         // the process's soft memory limit; 0 leaves it as it is
}

// configuration is one way the healthy controller runs: alone, or beside a set of hostile
// neighbours.
type configuration struct {
	name       string
	neighbours []neighbour
}

// neighbour is a hostile controller of testdata/noisy.yaml, and the result its sync calls
// count under (metascript_hook_invocations_total): every reconcile of its fails so.
type neighbour struct {
	name, form, result string
}

var configurations = []configuration{
	{"alone", nil},
	{"beside two burners", []neighbour{{"burner-starlark", "starlark", "budget"}, {"burner-javascript", "javascript", "budget"}}},
	{"beside hung webhooks", []neighbour{{"hung-1", "webhook", "error"}, {"hung-2", "webhook", "error"},
		{"hung-3", "webhook", "error"}, {"hung-4", "webhook", "error"}}},
	{"beside huge answers", []neighbour{{"huge", "starlark", "budget"}}},
}

// measurement is one convergence of the healthy controller.
type measurement struct {
	took          time.Duration
	engineCPU     float64 // seconds of the test process: the engine, and the test's watches
	apiserverCPU  float64
	peakRSS       float64 // MiB, of the test process while it converged
	noisyFailed   float64 // the neighbours' failed reconciles meanwhile
	noisyAsMeant  float64 // and their hook calls that failed as each neighbour should
	healthyFailed float64 // the healthy controller's failed reconciles: 0 expected
}

// requested reports whether a benchmark that runs only when asked for was: with the flag name
// on the command line, or METASCRIPT_NEIGHBORS set.
func requested(name string) bool {
	set := os.Getenv("METASCRIPT_NEIGHBORS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func TestNeighbors(t *testing.T) {
	if !requested("parents") {
		t.Skip("the neighbours benchmark runs with -parents=N or METASCRIPT_NEIGHBORS=1 (make bench-neighbors)")
	}
	limit, err := resource.ParseQuantity(*flagMemory)
	if err != nil {
		t.Fatalf("-memory-limit: %v", err)
	}
	p := params{*flagParents, *flagChildren, *flagNoisy, *flagRuns, *flagPprof, 120 * time.Minute, *flagQPS, *flagBurst, *flagBurn, limit.Value()}
	results, _ := run(t, p)
	report(t, p, results)
}

// TestNeighborsSmoke is one small round, run with every test suite: the healthy controller
// converges beside each set of neighbours, whose parents fail as each should and get no
// status.
func TestNeighborsSmoke(t *testing.T) {
	p := params{parents: 10, children: 2, noisy: 3, runs: 1, timeout: 4 * time.Minute, qps: 50, burst: 100, burn: 2 * time.Second}
	results, noisy := run(t, p)
	report(t, p, results)
	for _, c := range configurations {
		if m := results[c.name][0]; m.healthyFailed != 0 {
			t.Errorf("%s: the healthy controller failed %v reconciles", c.name, m.healthyFailed)
		}
		for _, n := range c.neighbours {
			// Every failed reconcile is a hook call that failed as the neighbour should.
			if m := noisy[n.name]; m.noisyFailed < float64(p.noisy) || m.noisyFailed != m.noisyAsMeant {
				t.Errorf("%s: %v failed reconciles, %v hook calls with result %s; want equal and at least %d",
					n.name, m.noisyFailed, m.noisyAsMeant, n.result, p.noisy)
			}
		}
	}
}

// run measures every configuration p.runs times, interleaved, on one control plane and one
// engine, and returns the measurements by configuration, and each neighbour's failed
// reconciles and hook calls that failed as it should over the whole run by its name. It also
// checks that the noisy parents get no status.
func run(t *testing.T, p params) (map[string][]measurement, map[string]measurement) {
	cp := startControlPlane(t, filepath.Join("testdata", "crds"))
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	admin := dynamic.NewForConfigOrDie(cp.Config)
	if err := enginetest.WarmWatchCaches(ctx, admin, enginetest.Fanouts, burners, configMaps); err != nil {
		t.Fatal(err)
	}
	hung := hungServer()
	defer hung.Close()
	if p.memoryLimit > 0 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(p.memoryLimit))
	}
	m := metrics.New()
	defer startEngine(t, ctx, engineOptions(cp.Config, m, p))()

	noisy := neighbourObjects(t, p.burn, hung.URL)
	create(t, ctx, admin, controllers, "", enginetest.ObjectsFromFile(t, filepath.Join("testdata", "healthy.yaml"))[0])
	create(t, ctx, admin, namespaces, "", namespace("noisy"))
	for i := range p.noisy {
		create(t, ctx, admin, burners, "noisy", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bench.metascript.dev/v1", "kind": "Burner",
			"metadata": map[string]any{"name": fmt.Sprintf("burner-%03d", i)}, "spec": map[string]any{}}})
	}
	apiserver, err := cp.APIServerPID()
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("neighbours: healthy %d Fanouts × %d ConfigMaps; noisy %d Burners, resync 5s; %d rounds; engine as metascript run's defaults (4 workers, --max-reconciles 16, --max-hook-calls 8, hook timeout 2s, 10M steps) but QPS %g, Burst %d, hook and webhook ceilings %s",
		p.parents, p.children, p.noisy, p.runs, p.qps, p.burst, p.burn)
	// A first, unmeasured convergence: so that the first configuration measured does not pay
	// for what happens once (the hook's compilation, connections, the API server's caches).
	converge(t, ctx, admin, m, "warm-up", params{parents: 10, children: p.children}, configurations[0], apiserver)
	results := map[string][]measurement{}
	for round := range p.runs {
		for _, c := range configurations {
			if !strings.Contains(c.name, *flagOnly) && c.neighbours != nil {
				continue
			}
			for _, n := range c.neighbours {
				create(t, ctx, admin, controllers, "", noisy[n.name].DeepCopy())
			}
			for _, n := range c.neighbours {
				// Hostile, and past its first calls: a burner's first calls start light, before
				// the engine knows it burns, and its next ones wait for the heavy lane.
				failing := func() bool { return failed(t, m, n) >= float64(min(2, p.noisy)) }
				if !poll(ctx, time.Minute+4*p.burn, failing) {
					cc, err := admin.Resource(controllers).Get(ctx, n.name, metav1.GetOptions{})
					t.Fatalf("%s is not failing after a minute; its status: %v %v; its parents' Events: %v",
						n.name, cc.Object["status"], err, events(ctx, admin, "noisy"))
				}
			}
			var profile *os.File
			if p.pprofDir != "" && round == 0 {
				profile = startProfile(t, p.pprofDir, c.name)
			}
			ns := fmt.Sprintf("r%d-%s", round, slug(c.name))
			got := converge(t, ctx, admin, m, ns, p, c, apiserver)
			if profile != nil {
				pprof.StopCPUProfile()
				profile.Close()
			}
			results[c.name] = append(results[c.name], got)
			t.Logf("  round %d, %-22s %6.2fs  (engine process CPU %.1fs, API server %.1fs, peak RSS %.0f MiB; neighbours: %v failed reconciles, %v hook calls failed as meant)",
				round+1, c.name+":", got.took.Seconds(), got.engineCPU, got.apiserverCPU, got.peakRSS, got.noisyFailed, got.noisyAsMeant)
			if len(c.neighbours) > 0 {
				checkNoisyParents(t, ctx, admin, p.noisy)
			}
			remove(t, ctx, admin, m, c.neighbours, p.burn)
		}
	}
	totals := map[string]measurement{}
	for _, c := range configurations {
		for _, n := range c.neighbours {
			totals[n.name] = measurement{noisyFailed: failed(t, m, n), noisyAsMeant: asMeant(t, m, n)}
		}
	}
	return results, totals
}

// startControlPlane starts a control plane with the engine's CRDs, the Fanout CRD and those
// of crdDirs.
func startControlPlane(t *testing.T, crdDirs ...string) *controlplane.ControlPlane {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(controlplane.Options{CRDDirs: append([]string{
		filepath.Join(root, "manifests", "crds"), enginetest.FanoutCRDs(root)}, crdDirs...)})
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// startEngine runs an engine of opts in-process until ctx ends or the function it returns is
// called, which returns once the engine stopped.
func startEngine(t *testing.T, ctx context.Context, opts engine.Options) (stop func()) {
	t.Helper()
	eng, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	engineCtx, stopEngine := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Run(engineCtx) }()
	return func() { stopEngine(); <-stopped }
}

// neighbourObjects are the controllers of testdata/noisy.yaml by name, their budgets burn and
// their webhooks at hung.
func neighbourObjects(t *testing.T, burn time.Duration, hung string) map[string]*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "noisy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("BURN", burn.String(), "HUNG", hung).Replace(string(raw))
	out := map[string]*unstructured.Unstructured{}
	for _, o := range enginetest.ObjectsFromYAML(t, text) {
		out[o.GetName()] = o
	}
	return out
}

// hung is a webhook that never answers: it holds each request until its caller gives up, or
// until Close.
type hung struct {
	*httptest.Server
	closed chan struct{}
}

func hungServer() *hung {
	h := &hung{closed: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-h.closed:
		}
	}))
	return h
}

// Close lets every held request go and stops the server.
func (h *hung) Close() {
	close(h.closed)
	h.Server.Close()
}

// failed is how many reconciles of neighbour n failed.
func failed(t *testing.T, m *metrics.Metrics, n neighbour) float64 {
	return counter(t, m.Reconciles, "compositecontroller/"+n.name, "error")
}

// asMeant is how many sync calls of neighbour n failed as it should.
func asMeant(t *testing.T, m *metrics.Metrics, n neighbour) float64 {
	return counter(t, m.HookInvocations, "compositecontroller/"+n.name, "sync", n.form, n.result)
}

// converge creates the healthy controller's parents in a new namespace ns and waits until
// every child exists and every parent's status is written.
func converge(t *testing.T, ctx context.Context, admin dynamic.Interface, m *metrics.Metrics, ns string,
	p params, c configuration, apiserver int) measurement {
	t.Helper()
	create(t, ctx, admin, namespaces, "", namespace(ns))
	watch := watchConvergence(t, ctx, admin, ns, p.parents, p.children)
	noisy := func() (failures, meant float64) {
		for _, n := range c.neighbours {
			failures += failed(t, m, n)
			meant += asMeant(t, m, n)
		}
		return failures, meant
	}
	failedBefore, meantBefore := noisy()
	healthyBefore := counter(t, m.Reconciles, "compositecontroller/"+healthy, "error")
	cpuBefore, apiBefore := selfCPU(t), processCPU(t, apiserver)
	resetPeakRSS(t)

	start := time.Now()
	err := enginetest.Parallel(ctx, 4, p.parents, func(ctx context.Context, i int) error {
		_, err := admin.Resource(enginetest.Fanouts).Namespace(ns).Create(ctx,
			enginetest.Fanout(fmt.Sprintf("fanout-%04d", i), p.children), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("creating parents: %v", err)
	}
	var at time.Time
	select {
	case at = <-watch:
	case <-ctx.Done():
		t.Fatalf("the healthy controller did not converge in %s: %v", ns, ctx.Err())
	}
	failedAfter, meantAfter := noisy()
	return measurement{
		took:          at.Sub(start),
		engineCPU:     selfCPU(t) - cpuBefore,
		apiserverCPU:  processCPU(t, apiserver) - apiBefore,
		peakRSS:       peakRSS(t),
		noisyFailed:   failedAfter - failedBefore,
		noisyAsMeant:  meantAfter - meantBefore,
		healthyFailed: counter(t, m.Reconciles, "compositecontroller/"+healthy, "error") - healthyBefore,
	}
}

// checkNoisyParents fails the test unless every noisy parent is as it was: no status, since
// a failed hook writes nothing.
func checkNoisyParents(t *testing.T, ctx context.Context, admin dynamic.Interface, n int) {
	t.Helper()
	list, err := admin.Resource(burners).Namespace("noisy").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Errorf("%d noisy parents, want %d", len(list.Items), n)
	}
	for _, b := range list.Items {
		if st, ok := b.Object["status"]; ok {
			t.Errorf("noisy parent %s has a status %v; a hook stopped by its budget must write nothing", b.GetName(), st)
		}
	}
}

// remove deletes neighbours and waits until their runners stopped: their hook calls no
// longer grow for longer than one call may run (burn).
func remove(t *testing.T, ctx context.Context, admin dynamic.Interface, m *metrics.Metrics, ns []neighbour, burn time.Duration) {
	t.Helper()
	if len(ns) == 0 {
		return
	}
	for _, n := range ns {
		if err := admin.Resource(controllers).Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	calls := func() float64 {
		sum := 0.0
		for _, n := range ns {
			for _, result := range []string{"success", "error", "budget", "invalid"} {
				sum += counter(t, m.HookInvocations, "compositecontroller/"+n.name, "sync", n.form, result)
			}
		}
		return sum
	}
	last, since := calls(), time.Now()
	waitFor(t, ctx, "the neighbours to stop", func() bool {
		if c := calls(); c != last {
			last, since = c, time.Now()
		}
		return time.Since(since) > burn+time.Second
	})
}

func report(t *testing.T, p params, results map[string][]measurement) {
	t.Helper()
	alone := stats(results["alone"], func(m measurement) float64 { return m.took.Seconds() })
	t.Logf("summary over %d runs each (healthy: %d parents × %d children; noisy: %d parents):", p.runs, p.parents, p.children, p.noisy)
	t.Logf("  %-22s %8s %8s %8s %8s %14s %14s %10s %12s", "configuration", "median", "max", "ratio", "ratio", "engine CPU", "API server", "peak RSS", "noisy failed")
	t.Logf("  %-22s %8s %8s %8s %8s %14s %14s %10s %12s", "", "s", "s", "median", "max", "s, median", "CPU s, median", "MiB, max", "reconciles")
	for _, c := range configurations {
		ms := results[c.name]
		took := stats(ms, func(m measurement) float64 { return m.took.Seconds() })
		cpu := stats(ms, func(m measurement) float64 { return m.engineCPU })
		api := stats(ms, func(m measurement) float64 { return m.apiserverCPU })
		rss := stats(ms, func(m measurement) float64 { return m.peakRSS })
		failed := stats(ms, func(m measurement) float64 { return m.noisyFailed })
		t.Logf("  %-22s %8.2f %8.2f %8.2f %8.2f %14.1f %14.1f %10.0f %12.0f", c.name, took.median, took.max,
			took.median/alone.median, took.max/alone.median, cpu.median, api.median, rss.max, failed.median)
	}
	t.Logf("  (ratio: to the median alone; goal: beside / alone ≤ 1.5; peak RSS of the whole test process, whose Go memory limit is %s)",
		resource.NewQuantity(p.memoryLimit, resource.BinarySI))
}

type summary struct{ median, max float64 }

// stats is the median and max of f over ms (measurements of either benchmark).
func stats[M any](ms []M, f func(M) float64) summary {
	var vs []float64
	for _, m := range ms {
		vs = append(vs, f(m))
	}
	if len(vs) == 0 {
		return summary{}
	}
	slices.Sort(vs)
	median := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		median = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return summary{median, vs[len(vs)-1]}
}

// counter reads a counter of the engine's metrics; 0 when it was never counted.
func counter(t *testing.T, vec *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
