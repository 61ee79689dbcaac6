package apply

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/engine/wire"
	"metascript.dev/metascript/test/controlplane"
)

// The control plane shared by every integration test of this package; each test works in
// namespaces of its own.
var (
	plain   dynamic.Interface // setup and inspection, not counted
	counted dynamic.Interface // what the Applier under test uses
	sent    atomic.Int64      // requests made through counted
)

var (
	configMaps     = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespaced: true}
	widgets        = Resource{GVR: schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "widgets"}, Namespaced: true}
	gadgets        = Resource{GVR: schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "gadgets"}, Namespaced: true}
	clusterWidgets = Resource{GVR: schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "clusterwidgets"}}
	namespaces     = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // integration tests skip themselves
	}
	cp, err := controlplane.Start(controlplane.Options{CRDDirs: []string{"testdata/crds"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plain = dynamic.NewForConfigOrDie(cp.Config)
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} })
	// The engine's own client: its answers lack managedFields, as the Applier meets them.
	if counted, err = wire.NewDynamic(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

type countingTransport struct{ next http.RoundTripper }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	sent.Add(1)
	return c.next.RoundTrip(r)
}

// integration skips under -short and returns a context for the test.
func integration(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	return t.Context()
}

// requests runs f and returns how many requests the counted client sent meanwhile. Tests
// using it must not run in parallel with other tests.
func requests(f func()) int64 {
	before := sent.Load()
	f()
	return sent.Load() - before
}

// newNamespace creates a namespace named after the test.
func newNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	ns := obj("v1", "Namespace", "", "")
	ns.SetGenerateName("apply-")
	created, err := plain.Resource(namespaces.GVR).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.GetName()
}

// newParent creates a Widget to serve as a parent and returns its ControllerRef.
func newParent(t *testing.T, ctx context.Context, namespace, name string) metav1.OwnerReference {
	t.Helper()
	parent := create(t, ctx, widgets, obj("test.metascript.dev/v1", "Widget", namespace, name))
	return OwnerRef(parent)
}

func create(t *testing.T, ctx context.Context, res Resource, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := plain.Resource(res.GVR).Namespace(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// observe reads the live object as the engine's cache would hold it: without managedFields.
func observe(t *testing.T, ctx context.Context, res Resource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	out, err := plain.Resource(res.GVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out.SetManagedFields(nil)
	return out
}

// gone reports whether the object no longer exists.
func gone(t *testing.T, ctx context.Context, res Resource, namespace, name string) bool {
	t.Helper()
	_, err := plain.Resource(res.GVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	return err != nil
}

// obj builds an object with the given identity.
func obj(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// configMap builds a ConfigMap with labels and data.
func configMap(namespace, name string, labels, data map[string]string) *unstructured.Unstructured {
	u := obj("v1", "ConfigMap", namespace, name)
	if labels != nil {
		u.SetLabels(labels)
	}
	if data != nil {
		m := map[string]interface{}{}
		for k, v := range data {
			m[k] = v
		}
		u.Object["data"] = m
	}
	return u
}

func dataOf(t *testing.T, u *unstructured.Unstructured) map[string]string {
	t.Helper()
	data, _, err := unstructured.NestedStringMap(u.Object, "data")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
