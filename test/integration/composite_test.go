package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
)

var env *enginetest.Env

func TestMain(m *testing.M) {
	var err error
	env, err = enginetest.Start(enginetest.Options{CRDDirs: []string{filepath.Join("testdata", "crds")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// controller creates the controller of a testdata file and returns it.
func controller(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	cc := enginetest.ObjectsFromFile(t, filepath.Join("testdata", file))[0]
	out := env.Create(t, "", cc)
	t.Cleanup(func() { env.Delete(t, out) })
	return out
}

func bundle(t *testing.T, ns, name, app string, items map[string]string) *unstructured.Unstructured {
	t.Helper()
	var list []any
	for k, v := range items {
		list = append(list, map[string]any{"name": k, "value": v})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.metascript.dev/v1", "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": app}},
			"items":    list,
		},
	}}
	return env.Create(t, ns, obj)
}

func configMap(t *testing.T, ns, name string) *unstructured.Unstructured {
	return env.Get(t, "v1", "ConfigMap", ns, name)
}

func TestChildrenCreatedUpdatedDeleted(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "b1", "b1", map[string]string{"a": "1", "b": "2"})
	enginetest.Eventually(t, 20*time.Second, func() (bool, string) {
		a, bb := configMap(t, ns, "b1-a"), configMap(t, ns, "b1-b")
		return a != nil && bb != nil, "children b1-a and b1-b not created"
	})
	a := configMap(t, ns, "b1-a")
	if ref := a.GetOwnerReferences(); len(ref) != 1 || ref[0].UID != b.GetUID() || ref[0].Controller == nil || !*ref[0].Controller {
		t.Fatalf("child's ownerReferences = %+v, want the parent as controller", ref)
	}
	enginetest.Eventually(t, 20*time.Second, func() (bool, string) {
		p := env.Get(t, "test.metascript.dev/v1", "Bundle", ns, "b1")
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "configMaps")
		g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
		return n == 2 && g == p.GetGeneration(), fmt.Sprintf("status = %v", p.Object["status"])
	})
	env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"changed"}]}}`)
	enginetest.Eventually(t, 20*time.Second, func() (bool, string) {
		a, bb := configMap(t, ns, "b1-a"), configMap(t, ns, "b1-b")
		v, _, _ := unstructured.NestedString(a.Object, "data", "value")
		return v == "changed" && (bb == nil || bb.GetDeletionTimestamp() != nil), fmt.Sprintf("b1-a value %q, b1-b exists %v", v, bb != nil)
	})
}
