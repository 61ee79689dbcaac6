// Package tenantcapacity tries, against a real API server, what one tenant can take of what
// every tenant of the engine shares: reconcile seats, cores, the API rate. Each test sets
// hostile tenants going, then shows that a healthy tenant's controller converges while the
// hostile ones still hold on: an order of events, not a time.
package tenantcapacity

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

var env *enginetest.Env

var (
	burners     = schema.GroupVersionResource{Group: "bench.metascript.dev", Version: "v1", Resource: "burners"}
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
)

func TestMain(m *testing.M) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// metascript run's workers; ceilings high enough that a burner holds its core for longer
	// than the healthy tenant takes to converge.
	ceilings := scripting.Budget{Timeout: 2 * time.Minute, MaxSteps: 100_000_000_000, MaxStackDepth: 1000, MaxMemory: 256 << 20}
	enginetest.Main(m, enginetest.Options{Workers: 4, Ceilings: &ceilings,
		CRDDirs: []string{enginetest.FanoutCRDs(root), filepath.Join("testdata", "crds")}}, &env)
}

// TestHungWebhooksHoldNoSeat: four tenants whose webhooks never answer keep sixteen calls
// waiting, as many as the engine's reconcile seats; a healthy tenant converges while every
// one of those calls is still waiting, because a reconcile waiting on a webhook gives its
// seat back.
func TestHungWebhooksHoldNoSeat(t *testing.T) {
	hung := newHungServer()
	defer hung.Close()
	ns := env.Namespace(t)
	for i := range 4 {
		burner(t, ns, fmt.Sprintf("b%d", i))
	}
	for i := range 4 {
		name := fmt.Sprintf("hung-%d", i)
		create(t, hungController(name, hung.URL))
		t.Cleanup(func() { deleteController(name) })
	}
	// Each controller's four workers wait on their four parents.
	waitFor(t, time.Minute, "16 webhook calls to wait", func() bool { return hung.waiting() >= 16 })

	ended := func() float64 {
		n := 0.0
		for i := range 4 {
			n += hookCalls(fmt.Sprintf("compositecontroller/hung-%d", i))
		}
		return n
	}
	converged := converge(t, "healthy-hung", 10, 2)
	if n := ended(); n > 0 || !converged {
		t.Fatalf("converged %v; %v of the hung calls ended first (their timeout): the healthy tenant waited for them", converged, n)
	}
}

// TestBurnersLeaveACore: two tenants whose hooks loop for a 90 s budget, one in each
// language, start calls on every core; a healthy tenant converges before any of those calls
// ends, because calls that run past the quantum move to the heavy lane and leave light cores
// to the calls of others.
func TestBurnersLeaveACore(t *testing.T) {
	ns := env.Namespace(t)
	for i := range 4 {
		burner(t, ns, fmt.Sprintf("b%d", i))
	}
	objs := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "hostile.yaml"))
	for _, o := range objs {
		create(t, o)
		t.Cleanup(func() { deleteController(o.GetName()) })
	}
	for _, o := range objs {
		waitFor(t, time.Minute, o.GetName()+" to run", func() bool { return ready(o.GetName()) })
	}
	time.Sleep(2 * time.Second) // their runners have started a call on every parent
	ended := func() float64 {
		return hookCalls("compositecontroller/burner-starlark") + hookCalls("compositecontroller/burner-javascript")
	}
	if n := ended(); n > 0 {
		t.Fatalf("%v burner calls ended before the test began; their budget is too short for it", n)
	}
	converged := converge(t, "healthy-burn", 10, 2)
	if n := ended(); n > 0 || !converged {
		t.Fatalf("converged %v; %v burner calls ended first: the healthy tenant waited for the cores they held", converged, n)
	}
}

// converge creates a healthy controller called name and parents Fanouts labelled for it
// with children ConfigMaps each, and reports whether every child exists and every status is
// written within two minutes. Its controller and parents are deleted when the test ends.
func converge(t *testing.T, name string, parents, children int) bool {
	t.Helper()
	create(t, healthyObject(t, healthyText(t), name))
	t.Cleanup(func() { deleteController(name) })
	ns := env.Namespace(t)
	createParents(t, ns, name, parents, children)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if convergedIn(ns, parents, children) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// healthyText is testdata/healthy.yaml.
func healthyText(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "healthy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// healthyObject is the healthy controller of text called name.
func healthyObject(t *testing.T, text, name string) *unstructured.Unstructured {
	t.Helper()
	return enginetest.ObjectsFromYAML(t, strings.ReplaceAll(text, "NAME", name))[0]
}

// createParents creates n Fanouts in ns for the healthy controller called name, each asking
// for children ConfigMaps.
func createParents(t *testing.T, ns, name string, n, children int) {
	t.Helper()
	for i := range n {
		f := enginetest.Fanout(fmt.Sprintf("%s-%d", name, i), children)
		f.SetLabels(map[string]string{"test": name})
		if _, err := env.Dynamic.Resource(enginetest.Fanouts).Namespace(ns).Create(context.Background(), f, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func convergedIn(ns string, parents, children int) bool {
	ctx := context.Background()
	cms, err := env.Dynamic.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "fanout"})
	if err != nil || len(cms.Items) < parents*children {
		return false
	}
	fs, err := env.Dynamic.Resource(enginetest.Fanouts).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, f := range fs.Items {
		if n, _, _ := unstructured.NestedInt64(f.Object, "status", "children"); n != int64(children) {
			return false
		}
	}
	return true
}

func burner(t *testing.T, ns, name string) {
	t.Helper()
	b := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.metascript.dev/v1", "kind": "Burner",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{}}}
	if _, err := env.Dynamic.Resource(burners).Namespace(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func hungController(name, url string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metascript.dev/v1alpha1", "kind": "CompositeController",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"parentResource":   map[string]any{"apiVersion": "bench.metascript.dev/v1", "resource": "burners"},
			"childResources":   []any{map[string]any{"apiVersion": "v1", "resource": "secrets"}},
			"generateSelector": true,
			"hooks":            map[string]any{"sync": map[string]any{"webhook": map[string]any{"url": url, "timeout": "1h"}}},
		},
	}}
}

func create(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if _, err := env.Dynamic.Resource(controllers).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deleteController(name string) {
	_ = env.Dynamic.Resource(controllers).Delete(context.Background(), name, metav1.DeleteOptions{})
}

// ready reports whether the controller's Ready condition is True.
func ready(name string) bool {
	u, err := env.Dynamic.Resource(controllers).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// hookCalls counts the controller's sync calls that ended, however they ended.
func hookCalls(ctl string) float64 {
	n := 0.0
	for _, form := range []string{"starlark", "javascript", "webhook"} {
		for _, result := range []string{"success", "error", "budget", "invalid"} {
			var m dto.Metric
			if err := env.Engine.Metrics.HookInvocations.WithLabelValues(ctl, "sync", form, result).Write(&m); err == nil {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// waitFor fails the test unless cond holds within timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// hungServer is a webhook that never answers: it holds every request until its caller gives
// up, or until Close, and counts the requests it holds.
type hungServer struct {
	*httptest.Server
	closed chan struct{}

	mu   sync.Mutex
	held int
}

func newHungServer() *hungServer {
	h := &hungServer{closed: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.held++
		h.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-h.closed:
		}
		h.mu.Lock()
		h.held--
		h.mu.Unlock()
	}))
	return h
}

// waiting is how many requests it holds now.
func (h *hungServer) waiting() int { h.mu.Lock(); defer h.mu.Unlock(); return h.held }

// Close lets every held request go and stops the server.
func (h *hungServer) Close() {
	close(h.closed)
	h.Server.Close()
}
