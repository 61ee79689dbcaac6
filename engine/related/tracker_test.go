package related

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/informers"
)

// The fake API server never ends a watch's initial events with a bookmark: informers list
// and then watch.
func init() { os.Setenv("KUBE_FEATURE_WatchListClient", "false") }

// newTestTracker is a tracker whose informers watch namespace (every namespace when empty).
func newTestTracker(t *testing.T, namespace string) (*Tracker[string], *informers.Factory) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps.GVR: "ConfigMapList", Namespaces.GVR: "NamespaceList"})
	factory := informers.NewFactory(client)
	t.Cleanup(factory.Shutdown)
	tr := New(factory, namespace, fakeResolver{}, v1alpha1.HookVersionV1, OwnNamespace, func(string) {})
	t.Cleanup(tr.Stop)
	return tr, factory
}

// relateConfigMaps has parent's customize answer relate every ConfigMap, reads them, and
// returns the rules.
func relateConfigMaps(t *testing.T, ctx context.Context, tr *Tracker[string], parent *unstructured.Unstructured) []Rule {
	t.Helper()
	rules, err := tr.Rules(parent, "", func() (map[string]any, error) {
		return map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps"}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Objects(ctx, parent, rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

func (t *Tracker[P]) running(gvr schema.GroupVersionResource) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sources[gvr] != nil
}

// TestBoundInformerOutlivesAnotherParentsFailure: a reconcile that fails stops the informers
// no bound rule names, which may include one another parent's reconcile has just started and
// read. Once that parent binds its rules, their informer runs, and keeps running through the
// parent's next reconciles.
func TestBoundInformerOutlivesAnotherParentsFailure(t *testing.T) {
	tr, _ := newTestTracker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	parent := parentIn("ns")
	rules := relateConfigMaps(t, ctx, tr, parent)
	// Another parent's customize hook fails while the first one's sync hook runs.
	other := parentIn("ns")
	other.SetUID("other")
	if _, err := tr.Rules(other, "", func() (map[string]any, error) { return nil, errors.New("hook failed") }); err == nil {
		t.Fatal("a failed customize call returned rules")
	}
	tr.Bind("ns/p", rules)
	if !tr.running(configMaps.GVR) {
		t.Fatal("the informer of a bound rule does not run")
	}
	for i := range 3 { // the parent's next reconciles, with the same rules
		if _, err := tr.Objects(ctx, parent, rules); err != nil {
			t.Fatal(err)
		}
		tr.Bind("ns/p", rules)
		if !tr.running(configMaps.GVR) {
			t.Fatalf("reconcile %d stopped the informer of a bound rule", i+2)
		}
	}
	tr.Forget("ns/p", parent.GetUID())
	if tr.running(configMaps.GVR) {
		t.Error("the informer still runs once no parent is bound to it")
	}
}

// TestObjectsMapsEveryResource: the related map has an entry for every resource the rules
// name, empty when nothing matches.
func TestObjectsMapsEveryResource(t *testing.T) {
	tr, _ := newTestTracker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rules := []Rule{{Resource: configMaps, Namespace: "ns", Names: []string{"a"}}}
	objs, err := tr.Objects(ctx, parentIn("ns"), rules)
	if err != nil {
		t.Fatal(err)
	}
	group, ok := objs[configMaps.Key()].(map[string]any)
	if !ok || len(group) != 0 {
		t.Fatalf("related map %v, want an empty group for ConfigMaps", objs)
	}
}

// A confined controller's tracker reads its related objects through informers of its
// namespace, never of every namespace, and starts none for a cluster-scoped resource.
func TestConfinedTrackerWatchesItsNamespace(t *testing.T) {
	tr, factory := newTestTracker(t, "ns")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	parent := parentIn("ns")
	relateConfigMaps(t, ctx, tr, parent)
	sizes := factory.Sizes()
	if _, ok := sizes[informers.Scope{GVR: configMaps.GVR, Namespace: "ns"}]; !ok || len(sizes) != 1 {
		t.Fatalf("informers %v, want the one of ConfigMaps in ns", sizes)
	}
	_, err := tr.Objects(ctx, parent, []Rule{{Resource: Namespaces, Selector: labels.Everything()}})
	if err == nil || !strings.Contains(err.Error(), "namespaces is cluster-scoped") {
		t.Fatalf("a cluster-scoped resource for a confined tracker: %v", err)
	}
	if tr.running(Namespaces.GVR) {
		t.Error("a confined tracker watches a cluster-scoped resource")
	}
}
