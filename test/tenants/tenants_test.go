// Package tenants measures many controllers in one engine: N CompositeControllers on one
// parent resource (Fanout), half with a Starlark sync hook and half with a JavaScript one,
// each hook's source its own, each controller selecting one parent by its own
// labelSelector (tenant=t<i>) and keeping one ConfigMap for it. For each N it reports, from
// the engine's process (test/engineproc), the CPU time and wall time from the engine's start
// to every parent converged, the CPU time of 30 s idle once everything settled, the peak RSS
// and the engine's requests by verb (from the API server's audit log).
//
//	make bench-tenants
//	go test -count=1 -timeout 120m -run '^TestTenants$' -v ./test/tenants/ -controllers=100,1000,5000 [-pprof]
//
// With -namespaced, each controller is a NamespacedCompositeController in a namespace of its
// own (t<i>, with a Role for its default account), its parent there: the engine then watches
// each namespace with informers of its own, two per tenant instead of two in all.
//
// Each N runs on a fresh control plane. Numbers are logged, never asserted. Without
// -controllers (or METASCRIPT_TENANTS=1) only TestTenantsSmoke runs: 3 controllers, with
// checks that every measurement is made.
package tenants

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagControllers = flag.String("controllers", "100,1000,5000", "comma-separated controller counts, one run each (TestTenants runs only when this flag or METASCRIPT_TENANTS is set)")
	flagWorkers     = flag.Int("workers", 4, "engine workers per controller (metascript run's default)")
	flagIdle        = flag.Duration("idle", 30*time.Second, "how long the settled engine is measured idle")
	flagPprof       = flag.Bool("pprof", false, "save CPU profiles of the engine: 30 s from its start, and the idle stretch; and a heap profile after it")
	flagNamespaced  = flag.Bool("namespaced", false, "each controller a NamespacedCompositeController in a namespace of its own, its parent there")
)

var (
	configMaps            = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	controllers           = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
	namespacedControllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "namespacedcompositecontrollers"}
)

const (
	namespace  = "tenants"
	engineUser = "metascript-engine"
)

// result is one run's measurements.
type result struct {
	controllers int
	converge    time.Duration // engine start to every parent converged
	convergeCPU float64       // engine CPU-seconds over converge
	// settleCPU is the engine's CPU-seconds from its start until it settled: every parent
	// converged and every controller's status counts written. The manager writes counts on
	// its own 10 s tick, so the longer convergence takes the more of them fall before it ends;
	// settled, every N has made the same writes.
	settleCPU   float64
	idle        time.Duration // the idle stretch measured
	idleCPU     float64       // engine CPU-seconds over it
	rssConverge int64         // peak RSS at convergence, bytes
	rssEnd      int64         // and after idle
	reconciles  float64       // successful reconciles to convergence and settling
	converged   map[string]int
	idleReqs    map[string]int // the engine's requests by verb
	profiles    []string
	namespaced  bool // each controller namespaced, in its own namespace
	informers   int  // the engine's informers at convergence (metascript_cache_objects series)
}

func TestTenants(t *testing.T) {
	set := os.Getenv("METASCRIPT_TENANTS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "controllers" })
	if !set {
		t.Skip("the tenants benchmark runs with -controllers=N,... or METASCRIPT_TENANTS=1 (make bench-tenants)")
	}
	var results []*result
	for _, s := range strings.Split(*flagControllers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("-controllers: %q is not a positive count", s)
		}
		r := run(t, n, *flagIdle, *flagPprof, *flagNamespaced)
		results = append(results, r)
		t.Log(line(r))
	}
	t.Log(table(results))
}

// TestTenantsSmoke is the benchmark with 3 controllers and a short idle: it checks that each
// measurement is made, not what it is.
func TestTenantsSmoke(t *testing.T) {
	for _, namespaced := range []bool{false, true} {
		r := run(t, 3, 2*time.Second, false, namespaced)
		t.Log(table([]*result{r}))
		if r.convergeCPU <= 0 || r.rssEnd <= 0 || r.reconciles < 3 || r.informers == 0 {
			t.Errorf("missing measurements: converge CPU %v s, RSS %d, reconciles %v, informers %d", r.convergeCPU, r.rssEnd, r.reconciles, r.informers)
		}
		if r.converged["create"] < 3 {
			t.Errorf("the audit log shows %d creates by the engine, want at least one ConfigMap per parent: %v", r.converged["create"], r.converged)
		}
	}
}

// layout is how a run's controllers are laid out: all cluster-scoped with their parents in
// one namespace, or (namespaced) each a namespaced controller in a namespace of its own.
type layout bool

const namespacedLayout layout = true

// namespace is where controller i's parent is, and a namespaced controller i itself.
func (l layout) namespace(i int) string {
	if l == namespacedLayout {
		return tenant(i)
	}
	return namespace
}

// controllers is the resource of the run's controllers.
func (l layout) controllers() schema.GroupVersionResource {
	if l == namespacedLayout {
		return namespacedControllers
	}
	return controllers
}

// prepare makes namespace ns; for namespaced controllers, with a Role letting its default
// account, as which the controller acts, do what the hooks ask for.
func (l layout) prepare(ctx context.Context, kube kubernetes.Interface, ns string) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		return err
	}
	if l != namespacedLayout {
		return nil
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"bench.metascript.dev"}, Resources: []string{"fanouts"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
		{APIGroups: []string{"bench.metascript.dev"}, Resources: []string{"fanouts/status"}, Verbs: []string{"get", "patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "default"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"}}, metav1.CreateOptions{})
	return err
}

func run(t *testing.T, n int, idle time.Duration, pprof, namespaced bool) *result {
	r := &result{controllers: n, idle: idle, namespaced: namespaced}
	lay := layout(namespaced)
	dir := t.TempDir()
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
	cp, err := controlplane.Start(controlplane.Options{
		CRDDirs:  []string{filepath.Join(root, "manifests", "crds"), enginetest.FanoutCRDs(root)},
		AuditLog: auditPath,
	})
	if err != nil {
		<-built
		t.Fatal(err)
	}
	defer cp.Stop()
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	timeout := 10*time.Minute + time.Duration(n)*100*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Minute)
	defer cancel()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1e6, 1e6
	admin := dynamic.NewForConfigOrDie(cfg)
	_, kubeconfig, err := cp.User(engineUser)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(dir, "engine.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	if !namespaced {
		if err := lay.prepare(ctx, kube, namespace); err != nil {
			t.Fatal(err)
		}
	}
	err = enginetest.Parallel(ctx, 20, n, func(ctx context.Context, i int) error {
		ns := lay.namespace(i)
		c := controller(i)
		if namespaced {
			if err := lay.prepare(ctx, kube, ns); err != nil {
				return err
			}
			c.SetKind("NamespacedCompositeController")
			c.SetNamespace(ns)
		}
		if _, err := admin.Resource(lay.controllers()).Namespace(c.GetNamespace()).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return err
		}
		p := enginetest.Fanout(fmt.Sprintf("p%d", i), 1)
		p.SetLabels(map[string]string{"tenant": tenant(i)})
		_, err := admin.Resource(enginetest.Fanouts).Namespace(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.WarmWatchCaches(ctx, admin, enginetest.Fanouts, configMaps); err != nil {
		t.Fatal(err)
	}

	audit := &auditLog{path: auditPath}
	auditStart := audit.size(t)
	start := time.Now()
	engine, err := engineproc.Start(bin, dir, kubeconfigPath, *flagWorkers, pprof)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Stop()
	profiled := make(chan error, 2)
	pprofDir := dir
	if pprof {
		if pprofDir, err = os.MkdirTemp("", "tenants-pprof-"); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(pprofDir, fmt.Sprintf("engine.%d.start.cpu.pprof", n))
		r.profiles = append(r.profiles, file)
		go func() { profiled <- engine.Profile(ctx, 30, file) }()
	}
	phaseCtx, phaseCancel := context.WithTimeout(ctx, timeout)
	defer phaseCancel()
	awaitConverged(t, phaseCtx, admin, engine, n)
	r.converge = time.Since(start)
	if r.convergeCPU, err = engineproc.CPUSeconds(engine.Pid()); err != nil {
		t.Fatal(err)
	}
	if r.rssConverge, err = engineproc.PeakRSS(engine.Pid()); err != nil {
		t.Fatal(err)
	}
	r.converged = audit.count(t, auditStart, audit.size(t))
	if r.informers, err = engine.MetricCount(ctx, "metascript_cache_objects"); err != nil {
		t.Fatal(err)
	}
	if pprof {
		if err := <-profiled; err != nil {
			t.Errorf("profile: %v", err)
		}
	}

	r.reconciles = settle(t, phaseCtx, engine, admin, lay.controllers())
	if r.settleCPU, err = engineproc.CPUSeconds(engine.Pid()); err != nil {
		t.Fatal(err)
	}
	idleStart := audit.size(t)
	before, err := engineproc.CPUSeconds(engine.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if pprof {
		file := filepath.Join(pprofDir, fmt.Sprintf("engine.%d.idle.cpu.pprof", n))
		r.profiles = append(r.profiles, file)
		if err := engine.Profile(ctx, int(idle.Seconds()), file); err != nil {
			t.Errorf("profile: %v", err)
		}
	} else {
		// The measurement itself: how much the engine spends while nothing changes.
		time.Sleep(idle)
	}
	after, err := engineproc.CPUSeconds(engine.Pid())
	if err != nil {
		t.Fatal(err)
	}
	r.idleCPU = after - before
	r.idleReqs = audit.count(t, idleStart, audit.size(t))
	if r.rssEnd, err = engineproc.PeakRSS(engine.Pid()); err != nil {
		t.Fatal(err)
	}
	if pprof {
		file := filepath.Join(pprofDir, fmt.Sprintf("engine.%d.heap.pprof", n))
		if _, err := engine.Heap(ctx, file); err != nil {
			t.Errorf("heap profile: %v", err)
		}
		r.profiles = append(r.profiles, file)
	}
	if err := engine.Running(); err != nil {
		t.Fatal(err)
	}
	return r
}

func tenant(i int) string { return "t" + strconv.Itoa(i) }

// controller is controller i: half Starlark, half JavaScript, each source distinct (so that
// each is its own compiled program), selecting the parent labelled tenant=t<i>.
func controller(i int) *unstructured.Unstructured {
	var hook map[string]any
	if i%2 == 0 {
		hook = map[string]any{"starlark": map[string]any{"source": fmt.Sprintf(`# tenant %d
def sync(request):
    parent = request["parent"]
    name = parent["metadata"]["name"]
    child = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": name, "labels": parent["spec"]["selector"]["matchLabels"]},
             "data": {"tenant": "%d"}}
    return {"status": {"children": 1}, "children": [child]}
`, i, i)}}
	} else {
		hook = map[string]any{"javascript": map[string]any{"source": fmt.Sprintf(`// tenant %d
function sync(request) {
  var parent = request.parent;
  var child = {apiVersion: "v1", kind: "ConfigMap",
               metadata: {name: parent.metadata.name, labels: parent.spec.selector.matchLabels},
               data: {tenant: "%d"}};
  return {status: {children: 1}, children: [child]};
}
`, i, i)}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metascript.dev/v1alpha1", "kind": "CompositeController",
		"metadata": map[string]any{"name": tenant(i)},
		"spec": map[string]any{
			"parentResource": map[string]any{"apiVersion": "bench.metascript.dev/v1", "resource": "fanouts",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"tenant": tenant(i)}}},
			"childResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps",
				"updateStrategy": map[string]any{"method": "InPlace"}}},
			"hooks": map[string]any{"sync": hook},
		},
	}}
}

// awaitConverged polls until every parent has its status written and its ConfigMap exists.
func awaitConverged(t *testing.T, ctx context.Context, admin dynamic.Interface, engine *engineproc.Process, n int) {
	t.Helper()
	for {
		parents, children := 0, 0
		list, err := admin.Resource(enginetest.Fanouts).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range list.Items {
				if c, _, _ := unstructured.NestedInt64(p.Object, "status", "children"); c == 1 {
					parents++
				}
			}
			cms, err := admin.Resource(configMaps).List(ctx, metav1.ListOptions{LabelSelector: "fanout"})
			if err == nil {
				children = len(cms.Items)
			}
		}
		if parents == n && children == n {
			return
		}
		if err := engine.Running(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the engine did not converge: %d of %d statuses, %d of %d children; its log ends:\n%s",
				parents, n, children, n, engine.LogTail())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// settle waits until every queue is empty and the reconcile count stood still for 2 s, and
// returns the successful reconciles.
func settle(t *testing.T, ctx context.Context, engine *engineproc.Process, admin dynamic.Interface, kind schema.GroupVersionResource) float64 {
	t.Helper()
	var last []float64
	quiet := time.Now()
	for {
		v, err := engine.MetricSum(ctx, "metascript_workqueue_depth", "metascript_reconciles_total")
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != 0 || last == nil || v[1] != last[1] {
			quiet = time.Now()
		} else if time.Since(quiet) >= 2*time.Second && countsWritten(t, ctx, admin, kind) {
			return v[1]
		}
		last = v
		select {
		case <-ctx.Done():
			t.Fatalf("the engine did not settle: %v (queue depth %v)", ctx.Err(), v[0])
		case <-time.After(time.Second): // each poll scrapes every controller's metrics: not more often than that
		}
	}
}

// countsWritten reports whether every controller's status counts its one parent and one
// child: the manager writes counts on its own tick, a write that belongs to converging, not
// to being idle.
func countsWritten(t *testing.T, ctx context.Context, admin dynamic.Interface, kind schema.GroupVersionResource) bool {
	t.Helper()
	list, err := admin.Resource(kind).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		p, _, _ := unstructured.NestedInt64(c.Object, "status", "parents")
		n, _, _ := unstructured.NestedInt64(c.Object, "status", "children")
		if p != 1 || n != 1 {
			return false
		}
	}
	return true
}

// auditLog counts the engine's requests in the API server's audit log, by verb.
type auditLog struct{ path string }

func (a *auditLog) size(t *testing.T) int64 {
	st, err := os.Stat(a.path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// count returns the engine's requests between two offsets of the log: each at
// ResponseComplete, a watch at ResponseStarted.
func (a *auditLog) count(t *testing.T, from, to int64) map[string]int {
	f, err := os.Open(a.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(io.LimitReader(f, to-from))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var ev struct {
			Stage string `json:"stage"`
			Verb  string `json:"verb"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != engineUser {
			continue
		}
		if ev.Verb == "watch" && ev.Stage == "ResponseStarted" || ev.Verb != "watch" && ev.Stage == "ResponseComplete" {
			out[ev.Verb]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func line(r *result) string {
	kind := "cluster-scoped"
	if r.namespaced {
		kind = "namespaced"
	}
	return fmt.Sprintf("%d %s controllers: converged in %v, %.1f engine CPU-s (%.1f to settle); idle %.2f CPU-s per %v; peak RSS %d MiB (%d MiB at convergence); %v reconciles; %d informers",
		r.controllers, kind, r.converge.Round(100*time.Millisecond), r.convergeCPU, r.settleCPU, r.idleCPU, r.idle, r.rssEnd>>20, r.rssConverge>>20, r.reconciles, r.informers)
}

func table(rs []*result) string {
	var b strings.Builder
	b.WriteString("\ncontrollers  converge-wall  converge-CPU-s  settle-CPU-s  idle-CPU-s/30s  peak-RSS-MiB  informers  requests-to-converge        idle-requests\n")
	for _, r := range rs {
		idle30 := r.idleCPU * (30 * time.Second).Seconds() / r.idle.Seconds()
		fmt.Fprintf(&b, "%11d  %13v  %14.1f  %12.1f  %14.2f  %12d  %9d  %-26s  %s\n", r.controllers, r.converge.Round(100*time.Millisecond),
			r.convergeCPU, r.settleCPU, idle30, r.rssEnd>>20, r.informers, verbs(r.converged), verbs(r.idleReqs))
	}
	for _, r := range rs {
		for _, p := range r.profiles {
			fmt.Fprintf(&b, "profile: %s\n", p)
		}
	}
	return b.String()
}

func verbs(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
