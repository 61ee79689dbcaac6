// Package scale measures, in one run against one local kube-apiserver and etcd, the engine
// converging PARENTS Fanout parents × CHILDREN ConfigMaps next to the floor: a bare client-go
// program sending the least the same result needs (one create per child, one status write
// per parent), with the same 5 workers and an unlimited client rate. Between the two, when a
// Metacontroller binary is found (findMetacontroller), Metacontroller does the same work with
// the same hook served as a webhook, measured as the engine is. Then it measures the engine's
// no-op resync of every parent.
//
//	make bench-scale PARENTS=2000 CHILDREN=5
//	go test -count=1 -timeout 120m -run '^TestScale$' -v ./test/scale/ -parents=2000 -children=5 [-pprof]
//
// The engine runs as its own process (`metascript run`, built for the run), so that its CPU
// time and peak RSS come from /proc; the floor, Metacontroller, the engine and the test's own
// watches are users of the API server, whose requests the API server's audit log counts,
// phase by phase. The API server's and etcd's CPU time come from /proc too. Numbers are
// logged, never asserted, except that the no-op resync must write nothing. Without -parents
// (or METASCRIPT_SCALE=1) only TestScaleSmoke runs: the same at 5 × 2, with checks that every
// measurement is there; TestScaleMetacontrollerSmoke adds Metacontroller's phase where it is
// found.
package scale

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagParents    = flag.Int("parents", 2000, "parents (TestScale runs only when this flag or METASCRIPT_SCALE is set)")
	flagChildren   = flag.Int("children", 5, "ConfigMap children per parent")
	flagWorkers    = flag.Int("workers", 5, "engine workers, and goroutines of the floor program")
	flagPprof      = flag.Bool("pprof", false, "save 30 s CPU profiles of the API server from the floor's start, of the engine and the API server from the engine's start, 5 s of the engine from the no-op resync's start, and the engine's heap once settled and after the resync")
	flagApply      = flag.Bool("floor-apply", false, "the floor writes the children by server-side apply, as the engine does, instead of create")
	flagWriters    = flag.Int("floor-child-writers", 1, "how many of a parent's children the floor writes at once (the engine: up to 8)")
	flagAuditLog   = flag.String("audit-log", "", "keep the API server's audit log in this file (default: a temporary file, removed)")
	flagUnselected = flag.Int("unselected", 0, "ConfigMaps no controller selects, created in namespace unselected before the first phase: what the cluster's unrelated objects cost the controllers")
	flagCBOR       = flag.Bool("cbor", false, "the API server serves CBOR (its CBORServingAndStorage gate) and the engine asks for it (client-go's ClientsAllowCBOR and ClientsPreferCBOR)")
	flagEngineArgs = flag.String("engine-args", "", "more flags of metascript run for the engine, separated by spaces, such as --memory-limit=512Mi")
	flagMC         = flag.Bool("metacontroller", true, "run the Metacontroller phase when its binary is found ($METACONTROLLER_BIN, else .cache/metacontroller/"+metacontrollerVersion+"/)")
)

var (
	fanouts     = enginetest.Fanouts
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
)

// The API server's users: each phase's requests are told apart by who sent them.
const (
	floorUser    = "floor"
	engineUser   = "metascript-engine"
	observerUser = "observer"
	controller   = "scale"
	queue        = "compositecontroller/" + controller
)

// profileSeconds is the length of the -pprof profiles of the floor and the cold start;
// resyncProfileSeconds of the engine's from the start of the no-op resync.
const (
	profileSeconds       = 30
	resyncProfileSeconds = 5
)

type params struct {
	parents, children, workers int
	pprof                      bool
	floor                      floorOptions
	// metacontroller runs the Metacontroller phase, when its binary is found.
	metacontroller bool
	// cbor has the engine and the API server speak CBOR.
	cbor bool
	// unselected ConfigMaps exist before the first phase.
	unselected int
	// engineArgs are more flags of metascript run.
	engineArgs []string
}

// phase is what one stretch of the run cost.
type phase struct {
	took                  time.Duration // to converge, or to settle
	first                 time.Duration // until the first child was seen
	requests              requests
	engineCPU             float64 // seconds
	apiserverCPU, etcdCPU float64 // seconds
	selfCPU               float64 // the test process: the floor program and the watches
	otherCPU, steal       float64 // the rest of the machine, and time stolen by the hypervisor
	wall                  time.Duration
	samples               []sample
}

type result struct {
	p                params
	floorProgram     time.Duration // the floor program's own time, first request to last response
	floor, engine    phase         // floor and engine to convergence
	mc               metacontrollerResult
	tail             phase // the engine from convergence until settled
	resync           phase // a no-op resync of every parent
	resyncReconciles float64
	peakRSS          int64     // the engine's at convergence, bytes
	peakRSSEnd       int64     // and after the resync
	cachedConfigMaps float64   // the ConfigMaps the engine caches at convergence
	liveHeap         [2]uint64 // with -pprof, the engine's live heap once settled and after the resync
	engineLog        string    // the end of it: warnings and errors
	profiles         []string  // files
}

func TestScale(t *testing.T) {
	set := os.Getenv("METASCRIPT_SCALE") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "parents" })
	if !set {
		t.Skip("the scale benchmark runs with -parents=N or METASCRIPT_SCALE=1 (make bench-scale)")
	}
	report(t, run(t, params{*flagParents, *flagChildren, *flagWorkers, *flagPprof, floorOptions{*flagApply, *flagWriters}, *flagMC, *flagCBOR, *flagUnselected, strings.Fields(*flagEngineArgs)}))
}

// TestScaleSmoke is the benchmark at 5 × 2, run with every test suite: it checks that each
// measurement is made, not what it is. It leaves the Metacontroller phase out, so that it
// runs the same whether Metacontroller is there or not: TestScaleMetacontrollerSmoke has it.
func TestScaleSmoke(t *testing.T) {
	p := params{parents: 5, children: 2, workers: 5}
	r := run(t, p)
	report(t, r)
	floor := r.floor.requests[floorUser]
	if n := floor[requestKind{"create", "configmaps"}]; n != p.parents*p.children {
		t.Errorf("the audit log shows %d ConfigMap creates by the floor, want %d", n, p.parents*p.children)
	}
	if n := floor[requestKind{"patch", "fanouts/status"}]; n != p.parents {
		t.Errorf("the audit log shows %d status patches by the floor, want %d", n, p.parents)
	}
	total, writes, children := requestTotals(r.engine.requests[engineUser], func(res string) bool { return res == "configmaps" })
	if total == 0 || writes < children || children < p.parents*p.children {
		t.Errorf("the engine's converging requests: %d, %d writes, %d to ConfigMaps (want ≥ %d):\n%s",
			total, writes, children, p.parents*p.children, formatKinds(r.engine.requests[engineUser], "  "))
	}
	// The floor's few requests may take less than a clock tick of API server CPU; the
	// engine's start alone takes more.
	if r.engine.engineCPU <= 0 || r.peakRSS <= 0 || r.engine.apiserverCPU <= 0 {
		t.Errorf("CPU or memory not measured: engine %.2fs, %d bytes; API server %.2fs",
			r.engine.engineCPU, r.peakRSS, r.engine.apiserverCPU)
	}
	if r.resyncReconciles < float64(p.parents) {
		t.Errorf("%v reconciles in the resync, want ≥ %d", r.resyncReconciles, p.parents)
	}
}

// phaseTimeout bounds one phase: generous, and growing with the objects written.
func phaseTimeout(p params) time.Duration {
	return 2*time.Minute + time.Duration(p.parents*(p.children+1))*10*time.Millisecond
}

// bench is the run's control plane and what it reads at phase boundaries.
type bench struct {
	t               *testing.T
	cp              *controlplane.ControlPlane
	admin           dynamic.Interface
	audit           *auditLog
	apiserver, etcd int                 // process IDs
	engine          *engineproc.Process // the controller measured now: Metacontroller, then the engine
	pprofDir        string              // where -pprof's profiles go
}

// mark is the state of the run at one instant.
type mark struct {
	at                      time.Time
	audit                   int64 // the audit log's size
	apiserver, etcd, engine float64
	self                    float64 // this process: the floor program and the watches
	busy, steal             float64 // the whole machine
}

func (b *bench) mark() mark {
	b.t.Helper()
	m := mark{at: time.Now()}
	var err error
	if m.apiserver, err = engineproc.CPUSeconds(b.apiserver); err != nil {
		b.t.Fatal(err)
	}
	if m.etcd, err = engineproc.CPUSeconds(b.etcd); err != nil {
		b.t.Fatal(err)
	}
	if b.engine != nil {
		if m.engine, err = engineproc.CPUSeconds(b.engine.Pid()); err != nil {
			b.t.Fatal(err)
		}
	}
	if m.self, err = engineproc.CPUSeconds(os.Getpid()); err != nil {
		b.t.Fatal(err)
	}
	if m.busy, m.steal, err = engineproc.MachineCPU(); err != nil {
		b.t.Fatal(err)
	}
	if m.audit, err = b.audit.size(); err != nil {
		b.t.Fatal(err)
	}
	return m
}

// costs fills ph's CPU times from two marks.
func (ph *phase) costs(from, to mark) {
	ph.apiserverCPU, ph.etcdCPU, ph.engineCPU = to.apiserver-from.apiserver, to.etcd-from.etcd, to.engine-from.engine
	ph.selfCPU, ph.steal = to.self-from.self, to.steal-from.steal
	ph.otherCPU = (to.busy - from.busy) - ph.apiserverCPU - ph.etcdCPU - ph.engineCPU - ph.selfCPU
	ph.wall = to.at.Sub(from.at)
}

// read counts the requests logged up to m.
func (b *bench) read(m mark) requests {
	b.t.Helper()
	r, err := b.audit.readTo(m.audit)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// run measures the floor, Metacontroller's cold start (when p.metacontroller and its binary
// is found), the engine's cold start and a no-op resync, in that order, on one control plane;
// it fails t if anything does not converge or the resync writes.
func run(t *testing.T, p params) *result {
	r := &result{p: p}
	dir := t.TempDir()
	// Built while the control plane starts; both are done before anything is measured.
	var bin string
	built := make(chan error, 1)
	go func() {
		var err error
		bin, err = engineproc.Build(dir)
		built <- err
	}()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.log")
	if *flagAuditLog != "" {
		if auditPath, err = filepath.Abs(*flagAuditLog); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(auditPath); err != nil && !os.IsNotExist(err) {
			t.Fatal(err) // the reader starts at the beginning of the file
		}
	}
	crdDirs := []string{filepath.Join(root, "manifests", "crds"), enginetest.FanoutCRDs(root)}
	var mcInstall metacontrollerInstall
	r.mc.skipped = "not asked for (-metacontroller=false; TestScaleMetacontrollerSmoke has it at 5 × 2)"
	if p.metacontroller {
		if mcInstall, err = findMetacontroller(root); err != nil {
			r.mc.skipped = err.Error()
		} else {
			r.mc.skipped = ""
			crdDirs = append(crdDirs, mcInstall.crds)
		}
	}
	cpOpts := controlplane.Options{CRDDirs: crdDirs, AuditLog: auditPath}
	if p.cbor {
		cpOpts.FeatureGates = "CBORServingAndStorage=true"
	}
	cp, err := controlplane.Start(cpOpts)
	if err != nil {
		<-built // before t.TempDir is removed
		t.Fatal(err)
	}
	defer cp.Stop()
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	timeout := phaseTimeout(p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*timeout+5*time.Minute)
	defer cancel()

	unlimited := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 1e6, 1e6
		return cfg
	}
	b := &bench{t: t, cp: cp, admin: dynamic.NewForConfigOrDie(unlimited(cp.Config))}
	user := func(name string) (*rest.Config, []byte) {
		cfg, kubeconfig, err := cp.User(name)
		if err != nil {
			t.Fatal(err)
		}
		return unlimited(cfg), kubeconfig
	}
	floorCfg, _ := user(floorUser)
	observerCfg, _ := user(observerUser)
	_, engineKubeconfig := user(engineUser)
	kubeconfig := filepath.Join(dir, "engine.kubeconfig")
	if err := os.WriteFile(kubeconfig, engineKubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if b.apiserver, err = cp.APIServerPID(); err != nil {
		t.Fatal(err)
	}
	if b.etcd, err = cp.EtcdPID(); err != nil {
		t.Fatal(err)
	}
	if b.audit, err = openAuditLog(auditPath); err != nil {
		t.Fatal(err)
	}
	defer b.audit.Close()
	t.Logf("scale: %d parents × %d children = %d ConfigMaps; %d workers; client QPS and Burst 1e6 (unlimited); engine built at %s",
		p.parents, p.children, p.parents*p.children, p.workers, bin)
	if len(p.engineArgs) > 0 {
		t.Logf("scale: the engine runs with %s", strings.Join(p.engineArgs, " "))
	}

	if p.unselected > 0 {
		b.createNamespace(ctx, "unselected")
		if err := createUnselected(ctx, b.admin, "unselected", p.unselected); err != nil {
			t.Fatal(err)
		}
		t.Logf("scale: %d ConfigMaps no controller selects in namespace unselected", p.unselected)
	}

	// The floor. Its parents and children are deleted afterwards: the engine would otherwise
	// sync its parents too, and cache its children.
	b.createNamespace(ctx, "floor")
	parents, err := createParents(ctx, b.admin, "floor", p.parents, p.children, 20)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := observe(ctx, observerCfg, "floor", p.parents, p.children)
	if err != nil {
		t.Fatal(err)
	}
	b.read(b.mark()) // the set-up's requests
	profiled := make(chan error, 3)
	if p.pprof {
		if b.pprofDir, err = os.MkdirTemp("", "scale-pprof-"); err != nil {
			t.Fatal(err)
		}
		r.profiles = append(r.profiles, b.profileAPIServer(ctx, "floor", profiled))
	}
	start := b.mark()
	obs.begin(ctx)
	phaseCtx, phaseCancel := context.WithTimeout(ctx, timeout)
	r.floorProgram, err = runFloor(phaseCtx, floorCfg, "floor", parents, p.children, p.workers, p.floor)
	if err != nil {
		t.Fatalf("the floor program: %v", err)
	}
	select {
	case <-obs.done:
	case <-phaseCtx.Done():
		s, c := obs.counts()
		t.Fatalf("the floor's writes were not all seen: %d statuses, %d children", s, c)
	}
	phaseCancel()
	end := b.mark()
	obs.end()
	r.floor.first, r.floor.took, r.floor.samples = obs.result()
	r.floor.costs(start, end)
	// Its last audit events may be written just after its last responses.
	time.Sleep(500 * time.Millisecond)
	end.audit, _ = b.audit.size()
	r.floor.requests = b.read(end)
	if p.pprof {
		if err := <-profiled; err != nil {
			t.Errorf("profile: %v", err)
		}
	}
	b.deleteAll(ctx, "floor")

	if r.mc.skipped == "" {
		t.Logf("scale: Metacontroller at %s, CRDs from %s", mcInstall.bin, mcInstall.crds)
		r.mc = b.runMetacontroller(ctx, mcInstall, dir, p, user, observerCfg)
	} else {
		t.Logf("scale: the Metacontroller phase is skipped: %s", r.mc.skipped)
	}

	// The engine, from a cold start: the controller and every parent exist, no child does.
	b.createNamespace(ctx, "engine")
	cc := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "controller.yaml"))[0]
	if _, err := b.admin.Resource(controllers).Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := createParents(ctx, b.admin, "engine", p.parents, p.children, 20); err != nil {
		t.Fatal(err)
	}
	if obs, err = observe(ctx, observerCfg, "engine", p.parents, p.children); err != nil {
		t.Fatal(err)
	}
	if err := enginetest.WarmWatchCaches(ctx, b.admin, fanouts, configMaps); err != nil {
		t.Fatal(err)
	}
	defer obs.end()
	b.read(b.mark())
	start = b.mark()
	obs.begin(ctx)
	if p.cbor { // the engine inherits the environment; this process's clients read it long ago
		t.Setenv("KUBE_FEATURE_ClientsAllowCBOR", "true")
		t.Setenv("KUBE_FEATURE_ClientsPreferCBOR", "true")
	}
	if b.engine, err = engineproc.Start(bin, dir, kubeconfig, p.workers, p.pprof, p.engineArgs...); err != nil {
		t.Fatal(err)
	}
	defer b.engine.Stop()
	if p.pprof {
		file := filepath.Join(b.pprofDir, "engine.cpu.pprof")
		go func() { profiled <- b.engine.Profile(ctx, profileSeconds, file) }()
		r.profiles = append(r.profiles, file, b.profileAPIServer(ctx, "engine", profiled))
	}
	phaseCtx, phaseCancel = context.WithTimeout(ctx, timeout)
	defer phaseCancel()
	b.await(phaseCtx, obs.done, func() string {
		s, c := obs.counts()
		return fmt.Sprintf("the engine did not converge: %d of %d statuses, %d of %d children",
			s, p.parents, c, p.parents*p.children)
	})
	converged := b.mark()
	if r.peakRSS, err = engineproc.PeakRSS(b.engine.Pid()); err != nil {
		t.Fatal(err)
	}
	r.engine.first, r.engine.took, r.engine.samples = obs.result()
	r.engine.costs(start, converged)
	cached, err := b.engine.Metric(ctx, `metascript_cache_objects{namespace="",resource="configmaps"}`)
	if err != nil {
		t.Fatal(err)
	}
	r.cachedConfigMaps = cached[0]
	settled := b.settle(phaseCtx)
	r.tail.took = settled.at.Sub(converged.at)
	r.tail.costs(converged, settled)
	r.engine.requests = b.read(converged)
	r.tail.requests = b.read(settled)
	if p.pprof {
		for range 2 {
			if err := <-profiled; err != nil {
				t.Errorf("profile: %v", err)
			}
		}
		r.profiles = append(r.profiles, b.heap(ctx, "settled", &r.liveHeap[0]))
	}

	// A no-op resync: the hook's source changes, so every parent syncs again; everything is
	// already as the hook wants it.
	phaseCancel()
	phaseCtx, phaseCancel = context.WithTimeout(ctx, timeout)
	defer phaseCancel()
	before := b.reconciles(ctx)
	b.read(b.mark())
	start = b.mark()
	if p.pprof {
		file := filepath.Join(b.pprofDir, "engine.resync.cpu.pprof")
		go func() { profiled <- b.engine.Profile(ctx, resyncProfileSeconds, file) }()
		r.profiles = append(r.profiles, file)
	}
	generation := b.editHook(ctx)
	b.waitResynced(phaseCtx, generation, before+float64(p.parents))
	end = b.settle(phaseCtx)
	if p.pprof {
		if err := <-profiled; err != nil {
			t.Errorf("profile: %v", err)
		}
		r.profiles = append(r.profiles, b.heap(ctx, "resynced", &r.liveHeap[1]))
	}
	r.resync.took = end.at.Sub(start.at)
	r.resync.costs(start, end)
	r.resync.requests = b.read(end)
	r.resyncReconciles = b.reconciles(ctx) - before
	if r.peakRSSEnd, err = engineproc.PeakRSS(b.engine.Pid()); err != nil {
		t.Fatal(err)
	}
	r.engineLog = b.engine.LogTail()
	_, _, writes := requestTotals(r.resync.requests[engineUser], func(res string) bool { return res != "compositecontrollers/status" })
	if writes != 0 {
		t.Errorf("a no-op resync of %d converged parents made %d writes, want 0:\n%s",
			p.parents, writes, formatKinds(r.resync.requests[engineUser], "  "))
	}
	return r
}

// heap runs a collection in the engine, saves its heap profile, named after phase, and its
// live heap in *live, and returns the file's path.
func (b *bench) heap(ctx context.Context, phase string, live *uint64) string {
	b.t.Helper()
	file := filepath.Join(b.pprofDir, "engine."+phase+".heap.pprof")
	var err error
	if *live, err = b.engine.Heap(ctx, file); err != nil {
		b.t.Errorf("heap profile: %v", err)
	}
	return file
}

// await waits for done, failing with msg() when ctx ends or the engine exits first.
func (b *bench) await(ctx context.Context, done <-chan struct{}, msg func() string) {
	b.t.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			b.t.Fatalf("%s: %v; its log ends:\n%s", msg(), ctx.Err(), b.engine.LogTail())
		case <-tick.C:
			if err := b.engine.Running(); err != nil {
				b.t.Fatalf("%s: %v", msg(), err)
			}
		}
	}
}

// settle waits until the engine's queue is empty, its reconcile count stands still and no one
// has sent the API server a request for a second, and returns the mark of that second's start.
func (b *bench) settle(ctx context.Context) mark {
	b.t.Helper()
	var last []float64
	quiet := b.mark()
	for {
		if err := b.engine.Running(); err != nil {
			b.t.Fatal(err)
		}
		v, err := b.engine.Metric(ctx, `metascript_workqueue_depth{name="`+queue+`"}`,
			`metascript_reconciles_total{controller="`+queue+`",result="success"}`,
			`metascript_reconciles_total{controller="`+queue+`",result="error"}`)
		if err != nil {
			b.t.Fatal(err)
		}
		now := b.mark()
		if v[0] != 0 || last == nil || v[1] != last[1] || v[2] != last[2] || now.audit != quiet.audit {
			quiet = now
		} else if time.Since(quiet.at) >= time.Second {
			return quiet
		}
		last = v
		select {
		case <-ctx.Done():
			b.t.Fatalf("the engine did not settle: %v (queue depth %v)", ctx.Err(), v[0])
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// reconciles is the engine's count of successful reconciles of the controller.
func (b *bench) reconciles(ctx context.Context) float64 {
	b.t.Helper()
	v, err := b.engine.Metric(ctx, `metascript_reconciles_total{controller="`+queue+`",result="success"}`)
	if err != nil {
		b.t.Fatal(err)
	}
	return v[0]
}

// editHook appends a comment to the sync hook's source: a new generation that the engine
// recompiles and re-syncs every parent with. It returns the new generation.
func (b *bench) editHook(ctx context.Context) int64 {
	b.t.Helper()
	var generation int64
	// The engine writes the controller's status meanwhile: retry on a stale resourceVersion.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cc, err := b.admin.Resource(controllers).Get(ctx, controller, metav1.GetOptions{})
		if err != nil {
			return err
		}
		src, _, _ := unstructured.NestedString(cc.Object, "spec", "hooks", "sync", "starlark", "source")
		if err := unstructured.SetNestedField(cc.Object, src+"# resync\n", "spec", "hooks", "sync", "starlark", "source"); err != nil {
			return err
		}
		out, err := b.admin.Resource(controllers).Update(ctx, cc, metav1.UpdateOptions{})
		if err == nil {
			generation = out.GetGeneration()
		}
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return generation
}

// waitResynced waits until the controller reports generation and the engine has counted at
// least want successful reconciles.
func (b *bench) waitResynced(ctx context.Context, generation int64, want float64) {
	b.t.Helper()
	for {
		cc, err := b.admin.Resource(controllers).Get(ctx, controller, metav1.GetOptions{})
		if err != nil {
			b.t.Fatal(err)
		}
		g, _, _ := unstructured.NestedInt64(cc.Object, "status", "observedGeneration")
		n := b.reconciles(ctx)
		if g == generation && n >= want {
			return
		}
		if err := b.engine.Running(); err != nil {
			b.t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("the parents were not re-synced: observedGeneration %d (want %d), reconciles %v (want %v)",
				g, generation, n, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (b *bench) createNamespace(ctx context.Context, name string) {
	b.t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name}}}
	if _, err := b.admin.Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
}

// deleteAll deletes every Fanout and ConfigMap of ns, a request per resource, and waits
// until they are gone. No garbage collector runs: the children go by themselves.
func (b *bench) deleteAll(ctx context.Context, ns string) {
	b.t.Helper()
	for _, gvr := range []schema.GroupVersionResource{configMaps, fanouts} {
		c := b.admin.Resource(gvr).Namespace(ns)
		for failures := 0; ; {
			// At 100,000 objects the request outlives the API server's request timeout, which
			// answers with a timeout or resets the HTTP/2 stream; the next one deletes what
			// is left. Only an error that keeps coming back ends the test.
			if err := c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				if failures++; failures == 10 {
					b.t.Fatalf("deleting %s of %s: %v", gvr.Resource, ns, err)
				}
			} else {
				failures = 0
			}
			list, err := c.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				b.t.Fatal(err)
			}
			// kube-root-ca.crt is not made: no controller-manager runs.
			if len(list.Items) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				b.t.Fatalf("%s of %s not deleted: %v", gvr.Resource, ns, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// profileAPIServer starts a CPU profile of the API server of profileSeconds, named after
// phase, that sends its error (or nil) to done, and returns its file.
func (b *bench) profileAPIServer(ctx context.Context, phase string, done chan<- error) string {
	file := filepath.Join(b.pprofDir, "kube-apiserver."+phase+".cpu.pprof")
	kube := kubernetes.NewForConfigOrDie(b.cp.Config)
	go func() {
		data, err := kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", fmt.Sprint(profileSeconds)).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		done <- err
	}()
	return file
}

// report logs the run's numbers: first the phases side by side, one column each (the floor,
// Metacontroller, Metascript), then the details.
func report(t *testing.T, r *result) {
	p := r.p
	var s strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	w("%d parents × %d children = %d ConfigMaps, %d workers, client rate unlimited; requests from the API server's audit log",
		p.parents, p.children, p.parents*p.children, p.workers)
	if p.unselected > 0 {
		w("%d more ConfigMaps that no controller selects (-unselected)", p.unselected)
	}
	if p.cbor {
		w("the API server serves CBOR and the engine asks for it (-cbor)")
	}
	s.WriteString(sideBySide(r))
	tt, tw := sum(r.tail, engineUser)
	rt, rw := sum(r.resync, engineUser)
	if r.mc.skipped != "" {
		w("  Metacontroller: skipped: %s", r.mc.skipped)
	} else {
		mt, mw := sum(r.mc.tail, metacontrollerUser)
		w("  Metacontroller %s: --workers %d, client rate unlimited, no rediscovery or relist within the run; its sync webhook (Go, in the test process, whose CPU is not in its column) was called %d times to converge",
			r.mc.version, p.workers, r.mc.calls)
		w("  Metacontroller, converged to settled: %.2fs, %d requests (%d writes), %d webhook calls, %.2fs CPU",
			r.mc.tail.took.Seconds(), mt, mw, r.mc.tailCalls, r.mc.tail.engineCPU)
	}
	w("  Metascript, converged to settled: %.2fs, %d requests (%d writes), %.2fs CPU", r.tail.took.Seconds(), tt, tw, r.tail.engineCPU)
	w("  Metascript, no-op resync of every parent: %.2fs, %d requests (%d writes), %.2fs engine CPU, API server %.2fs, etcd %.2fs",
		r.resync.took.Seconds(), rt, rw, r.resync.engineCPU, r.resync.apiserverCPU, r.resync.etcdCPU)
	floorWrites := "create"
	if p.floor.apply {
		floorWrites = "server-side apply"
	}
	w("  the floor writes children by %s, %d of a parent's at a time (-floor-child-writers); the engine up to 8", floorWrites, max(1, p.floor.childWriters))
	w("  time is until the test's watches saw every parent's status and children; the floor program itself took %.2fs",
		r.floorProgram.Seconds())
	mcFirst := "-"
	if r.mc.skipped == "" {
		mcFirst = fmt.Sprintf("%.2fs", r.mc.converge.first.Seconds())
	}
	w("  first child seen after: floor %.2fs, Metacontroller %s, Metascript %.2fs (process start, cache sync, first syncs)",
		r.floor.first.Seconds(), mcFirst, r.engine.first.Seconds())
	w("  engine CPU per parent converged: %.2f ms; no-op resync: %v reconciles, %.3f ms engine CPU per parent sync",
		1000*r.engine.engineCPU/float64(p.parents), r.resyncReconciles, 1000*r.resync.engineCPU/r.resyncReconciles)
	_, _, resyncWrites := requestTotals(r.resync.requests[engineUser], func(res string) bool { return res != "compositecontrollers/status" })
	w("  no-op resync writes to parents, children and events: %d (must be 0); engine peak RSS after it %.1f MiB",
		resyncWrites, float64(r.peakRSSEnd)/(1<<20))
	w("  ConfigMaps the engine caches at convergence: %.0f", r.cachedConfigMaps)
	if r.liveHeap[0] > 0 {
		w("  engine live heap (after a collection): settled %.1f MiB, after the resync %.1f MiB",
			float64(r.liveHeap[0])/(1<<20), float64(r.liveHeap[1])/(1<<20))
	}
	if r.mc.log != "" {
		w("  Metacontroller logged errors:\n%s", r.mc.log)
	}
	if r.engineLog != "" {
		w("  the engine logged (at --log-level warn), ending:\n%s", r.engineLog)
	}
	if len(r.profiles) > 0 {
		w("  CPU profiles, %d s from the start of the floor and of the engine: %s", profileSeconds, strings.Join(r.profiles, " "))
	}
	t.Log("scale:\n" + s.String())

	type named struct {
		name string
		ph   phase
		user string
	}
	phases := []named{{"floor", r.floor, floorUser}}
	if r.mc.skipped == "" {
		phases = append(phases, named{"Metacontroller, cold start to converged", r.mc.converge, metacontrollerUser},
			named{"Metacontroller, converged to settled", r.mc.tail, metacontrollerUser})
	}
	phases = append(phases, named{"engine, cold start to converged", r.engine, engineUser},
		named{"engine, converged to settled", r.tail, engineUser}, named{"engine, no-op resync", r.resync, engineUser})

	s.Reset()
	w("  %-40s %7s %11s %9s %11s %13s %16s %7s", "", "wall", "API server", "etcd", "controller", "test process", "other processes", "steal")
	for _, ph := range phases {
		w("  %-40s %6.2fs %10.2fs %8.2fs %10.2fs %12.2fs %15.2fs %6.2fs", ph.name, ph.ph.wall.Seconds(),
			ph.ph.apiserverCPU, ph.ph.etcdCPU, ph.ph.engineCPU, ph.ph.selfCPU, ph.ph.otherCPU, ph.ph.steal)
	}
	w("  (the machine has %d CPUs; controller: Metacontroller or the engine; test process: the floor program, the watches,", runtime.NumCPU())
	w("   Metacontroller's webhook and this test; other processes: whatever else ran meanwhile, which makes the run noisy when large)")
	t.Log("CPU seconds by process, per phase:\n" + s.String())

	s.Reset()
	for _, ph := range phases {
		w("  %s (user %s):", ph.name, ph.user)
		w("%s", formatKinds(ph.ph.requests[ph.user], "    "))
		w("    other users: %s", formatOthers(ph.ph.requests, ph.user))
	}
	t.Log("requests by phase, verb and resource (apply: a forced server-side apply patch):\n" + s.String())
	t.Log("parents with status written and children, by elapsed second (a controller's clock starts at its process start):\n" +
		timeline(r))
}

// sum is the total and the writes of one user's requests in ph.
func sum(ph phase, user string) (total, writes int) {
	total, writes, _ = requestTotals(ph.requests[user], func(string) bool { return true })
	return total, writes
}

// sideBySide is the table of the three phases to convergence, one column each; a skipped
// Metacontroller phase has its column say so.
func sideBySide(r *result) string {
	type column struct {
		name    string
		ph      phase
		user    string
		process bool // a controller process was measured
		rss     int64
		skipped bool
	}
	cols := []column{
		{name: "floor (client-go)", ph: r.floor, user: floorUser},
		{name: "Metacontroller " + r.mc.version, ph: r.mc.converge, user: metacontrollerUser, process: true, rss: r.mc.peakRSS, skipped: r.mc.skipped != ""},
		{name: "Metascript", ph: r.engine, user: engineUser, process: true, rss: r.peakRSS},
	}
	if r.mc.skipped != "" {
		cols[1].name = "Metacontroller"
	}
	floorTotal, _ := sum(r.floor, floorUser)
	var s strings.Builder
	row := func(label string, cell func(c column) string) {
		fmt.Fprintf(&s, "  %-36s", label)
		for _, c := range cols {
			v := "skipped"
			if !c.skipped {
				v = cell(c)
			}
			fmt.Fprintf(&s, " %22s", v)
		}
		s.WriteString("\n")
	}
	fmt.Fprintf(&s, "  %-36s", "")
	for _, c := range cols {
		fmt.Fprintf(&s, " %22s", c.name)
	}
	s.WriteString("\n")
	row("time to converge", func(c column) string { return fmt.Sprintf("%.2fs", c.ph.took.Seconds()) })
	row("ratio to floor", func(c column) string { return fmt.Sprintf("%.2f", c.ph.took.Seconds()/r.floor.took.Seconds()) })
	row("requests (user's own, audit log)", func(c column) string { t, _ := sum(c.ph, c.user); return fmt.Sprint(t) })
	row("  writes / reads", func(c column) string { t, w := sum(c.ph, c.user); return fmt.Sprintf("%d / %d", w, t-w) })
	row("  ratio to floor", func(c column) string { t, _ := sum(c.ph, c.user); return fmt.Sprintf("%.2f", ratio(t, floorTotal)) })
	row("controller CPU", func(c column) string {
		if !c.process {
			return "-"
		}
		return fmt.Sprintf("%.2fs", c.ph.engineCPU)
	})
	row("  Metascript's / Metacontroller's", func(c column) string {
		if c.user != engineUser || r.mc.skipped != "" || r.mc.converge.engineCPU == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", r.engine.engineCPU/r.mc.converge.engineCPU)
	})
	// Metacontroller keeps working after it has converged (a sync for each echo of its own
	// status writes); the engine does not. Both are asked the same: to settle.
	settled := func(c column) float64 {
		switch c.user {
		case metacontrollerUser:
			return r.mc.converge.engineCPU + r.mc.tail.engineCPU
		case engineUser:
			return r.engine.engineCPU + r.tail.engineCPU
		}
		return 0
	}
	row("controller CPU to settled", func(c column) string {
		if !c.process {
			return "-"
		}
		return fmt.Sprintf("%.2fs", settled(c))
	})
	row("  Metascript's / Metacontroller's", func(c column) string {
		if c.user != engineUser || r.mc.skipped != "" || settled(cols[1]) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", settled(c)/settled(cols[1]))
	})
	row("controller peak RSS", func(c column) string {
		if !c.process {
			return "-"
		}
		return fmt.Sprintf("%.1f MiB", float64(c.rss)/(1<<20))
	})
	row("API server CPU", func(c column) string { return fmt.Sprintf("%.2fs", c.ph.apiserverCPU) })
	row("etcd CPU", func(c column) string { return fmt.Sprintf("%.2fs", c.ph.etcdCPU) })
	return s.String()
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// timeline prints each phase's samples side by side (the floor, Metacontroller when it ran,
// the engine), at most about 60 rows, and how often the engine's status count was under 90%
// of the floor's.
func timeline(r *result) string {
	p := r.p
	type series struct {
		name     string
		took     time.Duration
		bySecond map[int]sample
	}
	bySecond := func(samples []sample) map[int]sample {
		out := make(map[int]sample, len(samples))
		for _, s := range samples {
			out[int(s.elapsed/time.Second)] = s
		}
		return out
	}
	all := []series{{name: "floor", took: r.floor.took, bySecond: bySecond(r.floor.samples)}}
	if r.mc.skipped == "" {
		all = append(all, series{name: "Metacontroller", took: r.mc.converge.took, bySecond: bySecond(r.mc.converge.samples)})
	}
	all = append(all, series{name: "engine", took: r.engine.took, bySecond: bySecond(r.engine.samples)})
	at := func(se series, sec int) (int, int) {
		if s, ok := se.bySecond[sec]; ok {
			return s.statuses, s.children
		}
		if time.Duration(sec)*time.Second >= se.took {
			return p.parents, p.parents * p.children
		}
		return -1, -1 // a tick the sampler missed
	}
	var longest time.Duration
	for _, se := range all {
		longest = max(longest, se.took)
	}
	rows := int(longest/time.Second) + 1
	step := max(1, (rows+59)/60)
	var s strings.Builder
	fmt.Fprintf(&s, "  %6s", "t")
	for _, se := range all {
		fmt.Fprintf(&s, " %*s %*s", len(se.name)+7, se.name+" status", len(se.name)+9, se.name+" children")
	}
	fmt.Fprintf(&s, " %12s\n", "engine/floor")
	under, compared := 0, 0
	for sec := 1; sec <= rows; sec++ {
		fs, _ := at(all[0], sec)
		es, _ := at(all[len(all)-1], sec)
		rt, mark := "", ""
		if fs > 0 && es >= 0 {
			rt = fmt.Sprintf("%.2f", float64(es)/float64(fs))
			compared++
			if float64(es) < 0.9*float64(fs) {
				under++
				mark = " <90%"
			}
		}
		if (sec-1)%step == 0 || sec == rows {
			fmt.Fprintf(&s, "  %5ds", sec)
			for _, se := range all {
				st, ch := at(se, sec)
				fmt.Fprintf(&s, " %*d %*d", len(se.name)+7, st, len(se.name)+9, ch)
			}
			fmt.Fprintf(&s, " %12s%s\n", rt, mark)
		}
	}
	fmt.Fprintf(&s, "  converged:")
	for _, se := range all {
		fmt.Fprintf(&s, " %s %.2fs;", se.name, se.took.Seconds())
	}
	fmt.Fprintf(&s, " the engine's status count was under 90%% of the floor's at %d of %d seconds", under, compared)
	if step > 1 {
		fmt.Fprintf(&s, " (every %d seconds shown)", step)
	}
	return s.String()
}
