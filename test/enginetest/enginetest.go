// Package enginetest runs the whole engine in-process against a real control plane, for the
// integration and example suites: the same engine.New and Run that `metascript run` uses.
package enginetest

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/manager"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
	"metascript.dev/metascript/test/controlplane"
)

// Env is a running control plane with the engine running against it.
type Env struct {
	ControlPlane *controlplane.ControlPlane
	Dynamic      dynamic.Interface
	Kube         kubernetes.Interface
	Engine       *engine.Engine

	// Requests counts the engine's API requests by verb (GET, LIST, WATCH, POST, PUT, PATCH,
	// DELETE) since the last Requests.Reset.
	Requests *RequestCounter

	engineOpts engine.Options
	cancel     context.CancelFunc
	done       chan error
}

// Options tune Start.
type Options struct {
	// CRDDirs are installed besides the project's own CRDs.
	CRDDirs []string
	// Workers per controller; default 2.
	Workers int
	// BeforeEngine, when set, runs once the control plane is up and before the engine
	// starts: to install what the engine needs to find, such as RBAC rules.
	BeforeEngine func(*controlplane.ControlPlane) error
	// EngineConfig, when set, adjusts the engine's copy of the control plane's config before
	// the engine is built: to wrap its transport, impersonate a user, or set QPS and Burst.
	// The Env's own clients keep the unmodified config.
	EngineConfig func(*rest.Config)
	// Isolated configures the engine's isolated tier; none when Workers is 0.
	Isolated isolated.Options
	// Ceilings, when set, replace the engine's budget ceilings.
	Ceilings *scripting.Budget
	// RemovalGrace bounds a deleted controller's finalize hooks; default 3 seconds, so that
	// tests see a stuck finalize released.
	RemovalGrace time.Duration
	// TenantAccounts, TenantWebhooks and TenantWebhooksForAll are the engine's tenant
	// rules (engine.Options); the zero values are metascript run's defaults.
	TenantAccounts       manager.TenantAccounts
	TenantWebhooks       *hooks.Egress
	TenantWebhooksForAll bool
}

// Start starts a control plane and the engine. Call Stop when done (TestMain).
func Start(opts Options) (*Env, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(controlplane.Options{
		CRDDirs: append([]string{filepath.Join(root, "manifests", "crds")}, opts.CRDDirs...),
	})
	if err != nil {
		return nil, err
	}
	if opts.BeforeEngine != nil {
		if err := opts.BeforeEngine(cp); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	level := slog.LevelWarn
	if os.Getenv("METASCRIPT_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	counter := &RequestCounter{}
	engineConfig := rest.CopyConfig(cp.Config)
	engineConfig.Wrap(counter.wrap)
	if opts.EngineConfig != nil {
		opts.EngineConfig(engineConfig)
	}
	ceilings := scripting.Budget{Timeout: 10 * time.Second, MaxSteps: 100_000_000, MaxStackDepth: 1000, MaxMemory: 256 << 20}
	if opts.Ceilings != nil {
		ceilings = *opts.Ceilings
	}
	engineOpts := engine.Options{
		Config:            engineConfig,
		Workers:           opts.Workers,
		MaxReconciles:     16, // as metascript run's defaults: every suite runs under the shared budget
		MaxHookCalls:      8,  // and the bound of each controller's hook calls
		CacheSize:         128,
		Defaults:          scripting.Budget{Timeout: 2 * time.Second, MaxSteps: 10_000_000, MaxStackDepth: 200, MaxMemory: 64 << 20},
		Ceilings:          ceilings,
		WebhookCeiling:    30 * time.Second, // as metascript run's defaults
		MaxAnswerBytes:    16 << 20,
		AnswerMemory:      256 << 20,
		MaxSourceBytes:    256 << 10,
		StatusInterval:    500 * time.Millisecond,
		RemovalGrace:      cmp.Or(opts.RemovalGrace, 3*time.Second),
		RevisionNamespace: "default",
		Log:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Isolated:          opts.Isolated,

		TenantAccounts:       opts.TenantAccounts,
		TenantWebhooks:       opts.TenantWebhooks,
		TenantWebhooksForAll: opts.TenantWebhooksForAll,
	}
	e := &Env{ControlPlane: cp, Requests: counter, engineOpts: engineOpts,
		Dynamic: dynamic.NewForConfigOrDie(cp.Config), Kube: kubernetes.NewForConfigOrDie(cp.Config)}
	if err := e.runEngine(); err != nil {
		cp.Stop()
		return nil, err
	}
	return e, nil
}

// runEngine builds an engine of the Env's options and runs it until Stop or RestartEngine.
func (e *Env) runEngine() error {
	eng, err := engine.New(e.engineOpts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Engine, e.cancel, e.done = eng, cancel, make(chan error, 1)
	go func() { e.done <- eng.Run(ctx) }()
	return nil
}

// RestartEngine stops the engine, as a process that exits does, and starts a new one with
// nothing kept in memory: what it resumes, it reads from the cluster.
func (e *Env) RestartEngine(t testing.TB) {
	t.Helper()
	e.cancel()
	<-e.done
	// The process's work queue metrics go to the first engine's registry (client-go takes one
	// provider per process): the new engine keeps it, as tests read metrics from it.
	e.engineOpts.Metrics = e.Engine.Metrics
	if err := e.runEngine(); err != nil {
		t.Fatal(err)
	}
}

// RestartEngineWith restarts the engine as RestartEngine does, with its options changed by
// adjust (which may replace Config with a copy of its own). The options stay changed for later
// restarts; it returns a function that restarts the engine with the options as they were.
func (e *Env) RestartEngineWith(t testing.TB, adjust func(*engine.Options)) (restore func()) {
	t.Helper()
	was := e.engineOpts
	adjust(&e.engineOpts)
	e.RestartEngine(t)
	return func() {
		e.engineOpts = was
		e.RestartEngine(t)
	}
}

// Stop stops the engine, then the control plane.
func (e *Env) Stop() {
	e.cancel()
	<-e.done
	_ = e.ControlPlane.Stop()
}

// Namespace creates a fresh namespace for one test.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	_, err := e.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// Resource maps an object's apiVersion and kind to its resource through discovery.
func (e *Env) Resource(t testing.TB, apiVersion, kind string) (schema.GroupVersionResource, bool) {
	t.Helper()
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(discovery.NewDiscoveryClientForConfigOrDie(e.ControlPlane.Config))
	if err != nil {
		t.Fatal(err)
	}
	m, err := restmapper.NewDiscoveryRESTMapper(groups).RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		t.Fatalf("mapping %s %s: %v", apiVersion, kind, err)
	}
	return m.Resource, m.Scope.Name() == "namespace"
}

// Client returns the dynamic client of obj's resource, namespaced as obj is.
func (e *Env) Client(t testing.TB, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvr, namespaced := e.Resource(t, obj.GetAPIVersion(), obj.GetKind())
	if namespaced {
		return e.Dynamic.Resource(gvr).Namespace(obj.GetNamespace())
	}
	return e.Dynamic.Resource(gvr)
}

// Object parses YAML into an object.
func Object(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("parsing YAML: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

// ObjectsFromFile parses a multi-document YAML file.
func ObjectsFromFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ObjectsFromYAML(t, string(data))
}

// ObjectsFromYAML parses multi-document YAML.
func ObjectsFromYAML(t testing.TB, text string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(text, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		out = append(out, Object(t, doc))
	}
	return out
}

// Create creates obj (in namespace ns when it is namespaced and names none).
func (e *Env) Create(t testing.TB, ns string, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if _, namespaced := e.Resource(t, obj.GetAPIVersion(), obj.GetKind()); namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace(ns)
	}
	out, err := e.Client(t, obj).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return out
}

// Get reads an object; nil when it does not exist.
func (e *Env) Get(t testing.TB, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(apiVersion)
	probe.SetKind(kind)
	probe.SetNamespace(ns)
	out, err := e.Client(t, probe).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("getting %s %s/%s: %v", kind, ns, name, err)
	}
	return out
}

// Patch merge-patches an object.
func (e *Env) Patch(t testing.TB, obj *unstructured.Unstructured, patch string) *unstructured.Unstructured {
	t.Helper()
	out, err := e.Client(t, obj).Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return out
}

// Delete deletes an object.
func (e *Env) Delete(t testing.TB, obj *unstructured.Unstructured) {
	t.Helper()
	err := e.Client(t, obj).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// Eventually polls cond every 50ms until it returns true or timeout passes; then it fails the
// test with the last message cond gave.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	msg := ""
	for {
		ok, m := cond()
		if ok {
			return
		}
		msg = m
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %s: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Events returns the Events about an object, by reason.
func (e *Env) Events(t testing.TB, ns, name string) map[string][]string {
	t.Helper()
	list, err := e.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, ev := range list.Items {
		out[ev.Reason] = append(out[ev.Reason], ev.Message)
	}
	return out
}

// WaitEvent waits up to timeout for an Event about object ns/name with reason whose message
// contains every one of texts.
func (e *Env) WaitEvent(t testing.TB, timeout time.Duration, ns, name, reason string, texts ...string) {
	t.Helper()
	Eventually(t, timeout, func() (bool, string) {
		ev := e.Events(t, ns, name)
		for _, m := range ev[reason] {
			if !slices.ContainsFunc(texts, func(text string) bool { return !strings.Contains(m, text) }) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event containing %q; events: %v", reason, texts, ev)
	})
}

// Condition returns the status of the condition of type typ in obj's status.conditions, or
// "" when there is none.
func Condition(obj *unstructured.Unstructured, typ string) string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// EngineResources are the resources the engine lists and watches whenever it starts: the
// controller kinds and the hook libraries.
var EngineResources = []schema.GroupVersionResource{
	v1alpha1.CompositeControllerResource, v1alpha1.DecoratorControllerResource, v1alpha1.MapControllerResource,
	v1alpha1.NamespacedCompositeControllerResource, v1alpha1.NamespacedDecoratorControllerResource,
	v1alpha1.NamespacedMapControllerResource, v1alpha1.HookLibraryResource, v1alpha1.NamespacedHookLibraryResource,
}

// WarmWatchCaches opens and closes a streaming watch of each resource, and of each resource
// the engine lists whenever it starts (EngineResources), retrying while the API server
// answers 429: it builds a custom resource's watch cache on the first request, and until that
// is ready it answers slowly or asks watches to come back a second later. Benchmarks call it
// so that an engine started on a fresh control plane is not timed waiting for that, which
// a long-lived cluster never makes it do.
func WarmWatchCaches(ctx context.Context, client dynamic.Interface, gvrs ...schema.GroupVersionResource) error {
	yes := true
	for _, gvr := range append(slices.Clone(EngineResources), gvrs...) {
		for {
			w, err := client.Resource(gvr).Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err == nil {
				w.Stop()
				break
			}
			if !apierrors.IsTooManyRequests(err) {
				return fmt.Errorf("watching %s: %w", gvr.Resource, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Main is a test package's TestMain: it starts the control plane and the engine with opts
// into *env, runs the package's tests, stops them and exits with the tests' code; a start
// that fails exits 1, saying why.
func Main(m *testing.M, opts Options, env **Env) {
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	e.Stop()
	os.Exit(code)
}
