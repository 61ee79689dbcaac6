package configmappropagation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/test/enginetest"
)

const metacontrollerAPI = "examples.metacontroller.io/v1alpha1"

// TestMetacontrollerWebhooks moves Metacontroller's ConfigMapPropagation example as its user
// would: their CRD and objects as they are, their CompositeController with only its
// apiVersion changed, their hooks still webhooks (served here by metacontrollerHooks, which
// answers as the example's Python server does). The copies appear and follow the source.
// Then the webhooks are replaced in place by this example's inline hooks in each language,
// with parentResource left as it is: the same copies are kept and still follow the source,
// and deleting the object removes them through finalize.
func TestMetacontrollerWebhooks(t *testing.T) {
	srv := httptest.NewServer(metacontrollerHooks(t))
	defer srv.Close()
	manifest, err := os.ReadFile(filepath.Join("testdata", "metacontroller", "controller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "controller.yaml")
	manifest = []byte(strings.NewReplacer("SYNC_URL", srv.URL+"/sync", "CUSTOMIZE_URL", srv.URL+"/customize").Replace(string(manifest)))
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	cc := exampletest.InstallController(t, env, file)

	src, one, two, three := env.Namespace(t), env.Namespace(t), env.Namespace(t), env.Namespace(t)
	source := env.Create(t, src, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {some: value, other: value}`))
	prop := env.Create(t, "", enginetest.Object(t, fmt.Sprintf(`
apiVersion: examples.metacontroller.io/v1alpha1
kind: ConfigMapPropagation
metadata: {name: settings-propagation}
spec:
  sourceName: settings
  sourceNamespace: %s
  targetNamespaces: [%s, %s, %s]`, src, one, two, three)))
	t.Cleanup(func() {
		env.Delete(t, prop)
		enginetest.Eventually(t, wait, func() (bool, string) {
			return env.Get(t, metacontrollerAPI, "ConfigMapPropagation", "", prop.GetName()) == nil, "the propagation still exists"
		})
	})
	counts := func() {
		t.Helper()
		enginetest.Eventually(t, wait, func() (bool, string) {
			cur := env.Get(t, metacontrollerAPI, "ConfigMapPropagation", "", prop.GetName())
			e, _, _ := unstructured.NestedInt64(cur.Object, "status", "expected_copies")
			a, _, _ := unstructured.NestedInt64(cur.Object, "status", "actual_copies")
			return e == 3 && a == 3, fmt.Sprintf("status = %v, want 3 copies expected and actual", cur.Object["status"])
		})
	}
	copies := waitCopies(t, prop, "settings", map[string]string{"some": "value", "other": "value"}, one, two, three)
	counts()
	env.Patch(t, source, `{"data":{"other":"changed"}}`)
	waitCopies(t, prop, "settings", map[string]string{"some": "value", "other": "changed"}, one, two, three)

	for i, l := range exampletest.Languages {
		exampletest.RequireSupport(t, env.Engine.Runtime, l.Lang, "k8s")
		cc = inlineHooks(t, cc, l.File)
		value := fmt.Sprintf("inline-%d", i)
		env.Patch(t, source, fmt.Sprintf(`{"data":{"other":%q}}`, value))
		for ns, c := range waitCopies(t, prop, "settings", map[string]string{"some": "value", "other": value}, one, two, three) {
			if c.GetUID() != copies[ns].GetUID() {
				t.Errorf("%s: the copy in %s was replaced when the hooks became inline", l.Name, ns)
			}
		}
		counts()
	}
	env.Delete(t, prop)
	waitNoCopy(t, "settings", one, two, three)
	if w := exampletest.Warnings(t, env, metav1.NamespaceDefault, "ConfigMapPropagation", prop.GetName()); len(w) > 0 {
		t.Errorf("Warning events: %v", w)
	}
}

// metacontrollerHooks answers customize and sync as the Python server of Metacontroller's
// example does: the source by namespace and name; a copy of its data in every target
// namespace, none once the source is gone; expected and actual copies in the status.
func metacontrollerHooks(t *testing.T) http.Handler {
	type spec struct {
		SourceName       string   `json:"sourceName"`
		SourceNamespace  string   `json:"sourceNamespace"`
		TargetNamespaces []string `json:"targetNamespaces"`
	}
	type request struct {
		Parent   struct{ Spec spec } `json:"parent"`
		Children map[string]map[string]any
		Related  map[string]map[string]struct {
			Data map[string]string `json:"data"`
		}
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Errorf("encoding a hook response: %v", err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /customize", func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s := req.Parent.Spec
		reply(w, map[string]any{"relatedResources": []any{map[string]any{
			"apiVersion": "v1", "resource": "configmaps", "namespace": s.SourceNamespace, "names": []string{s.SourceName}}}})
	})
	mux.HandleFunc("POST /sync", func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s := req.Parent.Spec
		children := []any{}
		if related := req.Related["ConfigMap.v1"]; len(related) > 0 {
			original := related[s.SourceNamespace+"/"+s.SourceName]
			for _, ns := range s.TargetNamespaces {
				children = append(children, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": s.SourceName, "namespace": ns}, "data": original.Data})
			}
		}
		reply(w, map[string]any{
			"status":   map[string]any{"expected_copies": len(s.TargetNamespaces), "actual_copies": len(req.Children["ConfigMap.v1"])},
			"children": children,
		})
	})
	return mux
}

// inlineHooks replaces the hooks of the running controller cc with those of this example's
// controller in file, and its script with that file's, keeping everything else (the name,
// parentResource, childResources), and waits until the engine runs the new generation.
func inlineHooks(t *testing.T, cc *unstructured.Unstructured, file string) *unstructured.Unstructured {
	t.Helper()
	inline := enginetest.ObjectsFromFile(t, file)[0]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName())
		spec := cur.Object["spec"].(map[string]any)
		spec["hooks"] = inline.Object["spec"].(map[string]any)["hooks"]
		spec["script"] = inline.Object["spec"].(map[string]any)["script"]
		out, err := env.Client(t, cur).Update(context.Background(), cur, metav1.UpdateOptions{})
		if err == nil {
			cc = out
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName())
		g, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
		return g == cc.GetGeneration() && enginetest.Condition(cur, "HooksCompiled") == "True" &&
				enginetest.Condition(cur, "Ready") == "True",
			fmt.Sprintf("controller status = %v", cur.Object["status"])
	})
	if !reflect.DeepEqual(cc.Object["spec"].(map[string]any)["parentResource"],
		map[string]any{"apiVersion": metacontrollerAPI, "resource": "configmappropagations"}) {
		t.Fatalf("parentResource changed: %v", cc.Object["spec"])
	}
	return cc
}
