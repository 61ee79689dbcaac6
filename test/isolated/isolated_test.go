// Package isolated_test runs the engine's isolated tier against a real control plane:
// controllers with spec.isolation: Process converge through worker processes, and a hook
// that kills its worker costs its own controller a Warning Event, nothing else.
package isolated_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
	"metascript.dev/metascript/test/enginetest"
)

var env *enginetest.Env

// workerEnv makes this test binary an isolated worker, as `metascript hook-worker` does.
const workerEnv = "METASCRIPT_TEST_ISOLATED_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(isolated.Serve(os.Stdin, os.Stdout))
	}
	ceilings := scripting.Budget{Timeout: 60 * time.Second, MaxSteps: 100_000_000, MaxStackDepth: 1000, MaxMemory: 64 << 30}
	var err error
	env, err = enginetest.Start(enginetest.Options{
		CRDDirs:  []string{filepath.Join("testdata", "crds")},
		Ceilings: &ceilings,
		Isolated: isolated.Options{Workers: 2, MemoryLimit: isolated.MinMemoryLimit, CPUTime: 30 * time.Second,
			Command: func() *exec.Cmd {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), workerEnv+"=1")
				return cmd
			}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

const (
	wait      = 30 * time.Second
	bundleAPI = "test.metascript.dev/v1"
)

func controller(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	out := env.Create(t, "", enginetest.Object(t, string(data)))
	t.Cleanup(func() { env.Delete(t, out) })
}

func bundle(t *testing.T, ns, name, suite string, items ...string) *unstructured.Unstructured {
	t.Helper()
	list := []any{}
	for _, it := range items {
		k, v, _ := strings.Cut(it, "=")
		list = append(list, map[string]any{"name": k, "value": v})
	}
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": suite}},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": name}}, "items": list},
	}})
}

func waitValue(t *testing.T, ns, name, want string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm := env.Get(t, "v1", "ConfigMap", ns, name)
		got := "<absent>"
		if cm != nil {
			got, _, _ = unstructured.NestedString(cm.Object, "data", "value")
		}
		return got == want, fmt.Sprintf("%s data.value = %q, want %q", name, got, want)
	})
}

// TestIsolatedControllerConverges: a CompositeController with isolation: Process creates,
// updates and reports on its children, its hook run in the workers.
func TestIsolatedControllerConverges(t *testing.T) {
	before := testutil.ToFloat64(env.Engine.Metrics.IsolatedCalls.WithLabelValues("success"))
	controller(t, "bundle-isolated.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "b1", "isolated", "a=1", "b=2")
	waitValue(t, ns, "b1-a", "1")
	waitValue(t, ns, "b1-b", "2")
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := env.Get(t, bundleAPI, "Bundle", ns, "b1")
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
		return n == 2, fmt.Sprintf("status = %v", p.Object["status"])
	})
	env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"changed"}]}}`)
	waitValue(t, ns, "b1-a", "changed")
	if after := testutil.ToFloat64(env.Engine.Metrics.IsolatedCalls.WithLabelValues("success")); after <= before {
		t.Errorf("isolated successful calls %v, before %v: the hook did not run in the tier", after, before)
	}
}

// TestMemoryBombCostsOnlyItsController: an isolated hook allocating past its worker's limit
// gets a Warning Event naming the limit on its parent and writes nothing; the worker is
// replaced, and the engine goes on serving another controller.
func TestMemoryBombCostsOnlyItsController(t *testing.T) {
	restarts := testutil.ToFloat64(env.Engine.Metrics.IsolatedRestarts.WithLabelValues("memory"))
	controller(t, "bundle-bomb.yaml")
	controller(t, "bundle-neighbor.yaml")
	ns := env.Namespace(t)
	bundle(t, ns, "bomb", "bomb", "a=1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		for _, msg := range env.Events(t, ns, "bomb")["HookFailed"] {
			if strings.Contains(msg, "worker process died") && strings.Contains(msg, "RLIMIT_AS") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %v", env.Events(t, ns, "bomb"))
	})
	if got := testutil.ToFloat64(env.Engine.Metrics.IsolatedRestarts.WithLabelValues("memory")); got <= restarts {
		t.Errorf("memory restarts %v, before %v", got, restarts)
	}
	bundle(t, ns, "calm", "neighbor", "x=1")
	waitValue(t, ns, "calm-x", "1")
	// The neighbor's child exists, so the bomb's reconciles, which began earlier, have been
	// acted on too: nothing of the bomb's was written.
	list, err := env.Kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if cm.Name == "never" {
			t.Errorf("the bomb's child %s was written", cm.Name)
		}
	}
	// And the tier still serves: an isolated controller converges after the bomb.
	controller(t, "bundle-isolated.yaml")
	bundle(t, ns, "after", "isolated", "y=2")
	waitValue(t, ns, "after-y", "2")
}
