package neighbors

// The many-builds neighbour: how long a tenant's new controller waits for its first child
// beside another tenant whose many controllers' builds each burn their whole compile budget
// and load one library edited every few seconds, so that the engine's builds never catch up.
//
//	make bench-neighbors
//	go test -count=1 -run '^TestBuildNeighbours$' -v ./test/neighbors/ -builds=60 -edit=3s -runs=3
//
// The neighbour (testdata/builds.yaml) is -builds NamespacedCompositeControllers in one
// namespace, each with its own source, whose top level loops until the compile budget (1 s)
// stops it, and which load the library shared, edited every -edit: every edit makes each of
// them build again. The newcomer is a NamespacedCompositeController of another namespace
// (another tenant), created beside a Fanout that asks for one ConfigMap: its time is from its
// creation to that child. Each round measures it alone, then beside the neighbour, which is
// created for that measurement (and given time to fill the build queue) and deleted after.
// Without -builds (or METASCRIPT_NEIGHBORS=1) only TestBuildNeighboursSmoke runs: one small
// round, which checks that every burner's build is stopped by its budget, that the edits
// rebuild them, and that the newcomer gets its child.

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagBuilds = flag.Int("builds", 60, "the many-builds neighbour's controllers (TestBuildNeighbours runs only when this flag or METASCRIPT_NEIGHBORS is set)")
	flagEdit   = flag.Duration("edit", 3*time.Second, "how often the many-builds neighbour's library is edited")
)

var (
	namespacedControllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "namespacedcompositecontrollers"}
	namespacedLibraries   = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "namespacedhooklibraries"}
)

// neighbourNamespace is the many-builds neighbour's namespace: its tenant.
const neighbourNamespace = "builds-neighbour"

type buildParams struct {
	builds, runs int
	edit         time.Duration
	timeout      time.Duration // of the whole run
}

// buildMeasurement is one newcomer's wait, and what the neighbour did meanwhile.
type buildMeasurement struct {
	took      time.Duration // from the newcomer's creation to its first child
	builds    float64       // the neighbour's builds meanwhile
	edits     int           // edits of its library meanwhile
	engineCPU float64       // seconds of the test process meanwhile
	// phaseBuilds and phaseEdits are the neighbour's builds and edits from its creation to its
	// deletion, beside the newcomer.
	phaseBuilds float64
	phaseEdits  int
}

func TestBuildNeighbours(t *testing.T) {
	if !requested("builds") {
		t.Skip("the many-builds neighbour runs with -builds=N or METASCRIPT_NEIGHBORS=1 (make bench-neighbors)")
	}
	p := buildParams{builds: *flagBuilds, runs: *flagRuns, edit: *flagEdit, timeout: 60 * time.Minute}
	reportBuilds(t, p, runBuilds(t, p))
}

// TestBuildNeighboursSmoke is one small round, run with every test suite: the newcomer gets
// its child alone and beside the neighbour, whose builds are each stopped by the compile
// budget and are made again by the library's edits.
func TestBuildNeighboursSmoke(t *testing.T) {
	p := buildParams{builds: 4, runs: 1, edit: time.Second, timeout: 4 * time.Minute}
	results := runBuilds(t, p)
	reportBuilds(t, p, results)
	if m := results["beside many builds"][0]; m.phaseBuilds <= float64(p.builds) || m.phaseEdits == 0 {
		t.Errorf("the neighbour: %v builds of its %d controllers and %d library edits; want each built again after an edit",
			m.phaseBuilds, p.builds, m.phaseEdits)
	}
}

// runBuilds measures the newcomer alone and beside the neighbour p.runs times each,
// interleaved, on one control plane and one engine.
func runBuilds(t *testing.T, p buildParams) map[string][]buildMeasurement {
	cp := startControlPlane(t)
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	admin, kube := dynamic.NewForConfigOrDie(cp.Config), kubernetes.NewForConfigOrDie(cp.Config)
	if err := enginetest.WarmWatchCaches(ctx, admin, enginetest.Fanouts, configMaps, namespacedControllers, namespacedLibraries); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	defer startEngine(t, ctx, engineOptions(cp.Config, m, params{qps: *flagQPS, burst: *flagBurst, burn: *flagBurn}))()

	objects := map[string]*unstructured.Unstructured{}
	for _, o := range enginetest.ObjectsFromFile(t, filepath.Join("testdata", "builds.yaml")) {
		objects[o.GetName()] = o
	}
	create(t, ctx, admin, namespaces, "", namespace(neighbourNamespace))
	grantDefault(t, ctx, kube, neighbourNamespace, rbacv1.PolicyRule{APIGroups: []string{"metascript.dev"},
		Resources: []string{"namespacedhooklibraries"}, Verbs: []string{"get"}})
	waitAllowed(t, ctx, kube, neighbourNamespace, "get", "metascript.dev", "namespacedhooklibraries")
	create(t, ctx, admin, namespacedLibraries, neighbourNamespace, objects["shared"].DeepCopy())
	n := &buildNeighbour{admin: admin, m: m, burner: objects["burner"], count: p.builds, every: p.edit}

	t.Logf("many builds: a newcomer's first child, alone and beside %d controllers of one tenant whose builds burn the 1 s compile budget, their library edited every %s; %d rounds; engine as metascript run's defaults but QPS %g, Burst %d",
		p.builds, p.edit, p.runs, *flagQPS, *flagBurst)
	newcomer(t, ctx, admin, kube, m, n, objects["newcomer"], "builds-warm-up") // compiles its source, opens the watches
	results := map[string][]buildMeasurement{}
	for round := range p.runs {
		alone := newcomer(t, ctx, admin, kube, m, n, objects["newcomer"], fmt.Sprintf("builds-r%d-alone", round))
		results["alone"] = append(results["alone"], alone)
		n.start(t, ctx)
		beside := newcomer(t, ctx, admin, kube, m, n, objects["newcomer"], fmt.Sprintf("builds-r%d-beside", round))
		beside.phaseBuilds, beside.phaseEdits = n.stop(t, ctx)
		results["beside many builds"] = append(results["beside many builds"], beside)
		t.Logf("  round %d: alone %6.2fs, beside %6.2fs (neighbour: %v builds and %d library edits while it waited, %v builds for %d edits in all; engine process CPU %.1fs alone, %.1fs beside)",
			round+1, alone.took.Seconds(), beside.took.Seconds(), beside.builds, beside.edits, beside.phaseBuilds, beside.phaseEdits,
			alone.engineCPU, beside.engineCPU)
	}
	return results
}

// newcomer creates namespace ns with a Fanout asking for one child and the RBAC its default
// account needs, then the newcomer controller, and measures the time until the child exists.
func newcomer(t *testing.T, ctx context.Context, admin dynamic.Interface, kube kubernetes.Interface, m *metrics.Metrics,
	n *buildNeighbour, controller *unstructured.Unstructured, ns string) buildMeasurement {
	t.Helper()
	create(t, ctx, admin, namespaces, "", namespace(ns))
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	grantDefault(t, ctx, kube, ns,
		rbacv1.PolicyRule{APIGroups: []string{"bench.metascript.dev"}, Resources: []string{"fanouts", "fanouts/status"}, Verbs: all},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	waitAllowed(t, ctx, kube, ns, "create", "", "configmaps")
	create(t, ctx, admin, enginetest.Fanouts, ns, enginetest.Fanout("first", 1))
	w, err := admin.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "fanout"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	builds, edits, cpu := n.builds(t), n.edited(), selfCPU(t)
	start := time.Now()
	create(t, ctx, admin, namespacedControllers, ns, controller.DeepCopy())
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: the watch of its ConfigMaps ended", ns)
			}
			if ev.Type != watch.Added {
				continue
			}
			return buildMeasurement{took: time.Since(start), builds: n.builds(t) - builds, edits: n.edited() - edits,
				engineCPU: selfCPU(t) - cpu}
		case <-ctx.Done():
			cur, err := admin.Resource(namespacedControllers).Namespace(ns).Get(context.Background(), controller.GetName(), metav1.GetOptions{})
			t.Fatalf("%s: the newcomer made no child: %v; its status %v %v", ns, ctx.Err(), cur.Object["status"], err)
		}
	}
}

// buildNeighbour is the many-builds neighbour: count burners loading the library shared,
// which a goroutine edits every while it runs.
type buildNeighbour struct {
	admin  dynamic.Interface
	m      *metrics.Metrics
	burner *unstructured.Unstructured
	count  int
	every  time.Duration

	// since and editsSince are the counts of builds and edits before the burners were last
	// created; rounds counts their creations.
	since      float64
	editsSince int
	rounds     int

	mu      sync.Mutex
	edits   int // library edits so far: each makes a new revision
	editing context.CancelFunc
	done    chan struct{}
}

func (n *buildNeighbour) name(i int) string { return fmt.Sprintf("burner-%03d", i) }

// who is burner i's own source line, new each round: a source compiled in an earlier round
// would be found in the compile cache, and not burn.

// builds is how many times the engine built the neighbour's controllers.
func (n *buildNeighbour) builds(t *testing.T) float64 {
	sum := 0.0
	for i := range n.count {
		sum += testutil.ToFloat64(n.m.ControllerBuilds.WithLabelValues("namespacedcompositecontroller/" + neighbourNamespace + "/" + n.name(i)))
	}
	return sum
}

func (n *buildNeighbour) edited() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.edits
}

// start creates the burners and starts editing the library; it returns once every burner was
// built, and three edits later: from then on the engine's build queue holds a build of each
// burner, made again by every edit.
func (n *buildNeighbour) start(t *testing.T, ctx context.Context) {
	t.Helper()
	before, editsBefore := n.builds(t), n.edited()
	for i := range n.count {
		b := n.burner.DeepCopy()
		b.SetName(n.name(i))
		src, _, _ := unstructured.NestedString(b.Object, "spec", "hooks", "sync", "starlark", "source")
		src = strings.Replace(src, `WHO = "burner"`, fmt.Sprintf("WHO = \"%s, round %d\"", n.name(i), n.rounds), 1)
		if err := unstructured.SetNestedField(b.Object, src, "spec", "hooks", "sync", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
		create(t, ctx, n.admin, namespacedControllers, neighbourNamespace, b)
	}
	waitFor(t, ctx, "every burner built", func() bool { return n.builds(t)-before >= float64(n.count) })
	n.checkBurners(t, ctx)
	editCtx, cancel := context.WithCancel(ctx)
	n.editing, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		tick := time.NewTicker(n.every)
		defer tick.Stop()
		for {
			n.edit(t, editCtx)
			select {
			case <-editCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	built := n.builds(t)
	edits := n.edited()
	waitFor(t, ctx, "builds after three library edits", func() bool { return n.edited() >= edits+3 && n.builds(t) > built })
	n.since, n.editsSince = before, editsBefore
}

// checkBurners fails the test unless every burner's build failed on its budget.
func (n *buildNeighbour) checkBurners(t *testing.T, ctx context.Context) {
	t.Helper()
	for i := range n.count {
		cur, err := n.admin.Resource(namespacedControllers).Namespace(neighbourNamespace).Get(ctx, n.name(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		if !strings.Contains(fmt.Sprint(conds), "budget") {
			t.Fatalf("%s: its build was not stopped by its budget: %v", n.name(i), conds)
		}
	}
}

// edit changes the library's module, so that its revision changes.
func (n *buildNeighbour) edit(t *testing.T, ctx context.Context) {
	libs := n.admin.Resource(namespacedLibraries).Namespace(neighbourNamespace)
	cur, err := libs.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		return // ctx ended
	}
	n.mu.Lock()
	edit := n.edits + 1
	n.mu.Unlock()
	mods, _, _ := unstructured.NestedSlice(cur.Object, "spec", "modules")
	mods[0].(map[string]any)["starlark"] = fmt.Sprintf("EDIT = %d\n", edit)
	_ = unstructured.SetNestedSlice(cur.Object, mods, "spec", "modules")
	if _, err := libs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		if ctx.Err() == nil {
			t.Logf("editing the library: %v", err)
		}
		return
	}
	n.mu.Lock()
	n.edits = edit
	n.mu.Unlock()
}

// stop stops the edits, deletes the burners and waits until the engine is done with them: none
// is left, and no build of theirs is queued. It returns how many times they were built since
// start, and how many edits were made.
func (n *buildNeighbour) stop(t *testing.T, ctx context.Context) (builds float64, edits int) {
	t.Helper()
	n.editing()
	<-n.done
	builds, edits = n.builds(t)-n.since, n.edited()-n.editsSince
	n.rounds++
	for i := range n.count {
		if err := n.admin.Resource(namespacedControllers).Namespace(neighbourNamespace).Delete(ctx, n.name(i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "the burners to go", func() bool {
		list, err := n.admin.Resource(namespacedControllers).Namespace(neighbourNamespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0 && n.m.QueueDepth("controllers") == 0
	})
	return builds, edits
}

// grantDefault lets namespace ns's default ServiceAccount, which its controllers act as, do
// what rules say there.
func grantDefault(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}, Rules: rules}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "default"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed waits until the API server's authorizer lets ns's default account do verb on
// resource: the engine caches its answers, so a refusal seen before the RoleBinding took
// effect would last.
func waitAllowed(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns, verb, group, resource string) {
	t.Helper()
	waitFor(t, ctx, "the default account of "+ns+" allowed to "+verb+" "+resource, func() bool {
		r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + ns + ":default",
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource}},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed
	})
}

func reportBuilds(t *testing.T, p buildParams, results map[string][]buildMeasurement) {
	t.Helper()
	took := func(m buildMeasurement) float64 { return m.took.Seconds() }
	alone := stats(results["alone"], took)
	t.Logf("summary over %d runs each (newcomer's creation to its first child; neighbour: %d controllers, library edited every %s):", p.runs, p.builds, p.edit)
	t.Logf("  %-20s %8s %8s %8s %8s %16s %14s", "configuration", "median", "max", "ratio", "ratio", "neighbour builds", "engine CPU")
	t.Logf("  %-20s %8s %8s %8s %8s %16s %14s", "", "s", "s", "median", "max", "meanwhile, median", "s, median")
	for _, name := range []string{"alone", "beside many builds"} {
		ms := results[name]
		s := stats(ms, took)
		b := stats(ms, func(m buildMeasurement) float64 { return m.builds })
		cpu := stats(ms, func(m buildMeasurement) float64 { return m.engineCPU })
		t.Logf("  %-20s %8.2f %8.2f %8.2f %8.2f %16.0f %14.1f", name, s.median, s.max, s.median/alone.median, s.max/alone.median, b.median, cpu.median)
	}
	t.Logf("  (goal: one tenant's expensive builds delay another's new controller by no more than a few seconds)")
}
