package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

// TestRenderAgreesWithTheEngine: for every example in both languages, what `metascript
// render --until-stable` says the engine will leave in the cluster is what the engine, run
// on the same controller and sample, leaves there: the same children with the same content,
// and the same parent status.
func TestRenderAgreesWithTheEngine(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Each example, with the fields that hold the time of the hook call itself, which render
	// (--now) and the engine (the clock) cannot share.
	examples := map[string][]string{
		"website":            nil,
		"service-per-object": nil,
		"snapshot-schedule":  {"spec.takenAt"},
	}
	var crds []string
	for ex := range examples {
		crds = append(crds, filepath.Join(root, "examples", ex, "crd.yaml"))
	}
	env, err := enginetest.Start(enginetest.Options{CRDDirs: crds})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	_, dir, bin := buildEngine(t)

	for ex, timed := range examples {
		for _, lang := range []string{"starlark", "javascript"} {
			t.Run(ex+"/"+lang, func(t *testing.T) {
				exDir := filepath.Join(root, "examples", ex)
				controllerFile := filepath.Join(exDir, "controller-"+lang+".yaml")
				ns := env.Namespace(t)
				// The sample goes into the cluster first, before its controller: render then reads
				// the very objects the engine will (their UIDs name outputs and children).
				var parent *unstructured.Unstructured
				var docs []string
				for i, obj := range enginetest.ObjectsFromFile(t, filepath.Join(exDir, "sample.yaml")) {
					created := env.Create(t, ns, obj)
					if i == 0 {
						parent = created
					}
					raw, err := yaml.Marshal(created.Object)
					if err != nil {
						t.Fatal(err)
					}
					docs = append(docs, string(raw))
				}
				parentFile := filepath.Join(dir, ex+"-"+lang+"-sample.yaml")
				if err := os.WriteFile(parentFile, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
					t.Fatal(err)
				}
				render := exec.Command(bin, "render", "-f", controllerFile, "-f", filepath.Join(exDir, "crd.yaml"),
					"--parent", parentFile, "--until-stable", "--now", time.Now().UTC().Format(time.RFC3339))
				out, err := render.Output()
				if err != nil {
					t.Fatalf("metascript render: %v\n%s", err, out)
				}
				want := renderedState(t, string(out))
				if len(want.objects) == 0 {
					t.Fatalf("render predicts no object:\n%s", out)
				}

				cc := env.Create(t, "", enginetest.ObjectsFromFile(t, controllerFile)[0])
				t.Cleanup(func() { // gone before the other language's controller of that name comes
					env.Delete(t, cc)
					enginetest.Eventually(t, 60*time.Second, func() (bool, string) {
						return env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName()) == nil, "the controller is still there"
					})
				})
				enginetest.Eventually(t, 60*time.Second, func() (bool, string) {
					for _, w := range want.objects {
						got := env.Get(t, w.GetAPIVersion(), w.GetKind(), w.GetNamespace(), w.GetName())
						if got == nil {
							return false, fmt.Sprintf("render predicts %s %s/%s; the engine has not made it", w.GetKind(), w.GetNamespace(), w.GetName())
						}
						if diff := contentDiff(w, got, timed); diff != "" {
							return false, fmt.Sprintf("%s %s/%s: %s", w.GetKind(), w.GetNamespace(), w.GetName(), diff)
						}
					}
					if want.status != nil {
						got := env.Get(t, parent.GetAPIVersion(), parent.GetKind(), ns, parent.GetName())
						status, _ := got.Object["status"].(map[string]any)
						if diff := subset("status", withoutTimes(want.status), withoutTimes(status)); diff != "" {
							return false, "parent " + diff
						}
					}
					return true, ""
				})
			})
		}
	}
}

// rendered is what a render's output says the cluster will hold: the objects created or
// updated, and the parent's status.
type rendered struct {
	objects []*unstructured.Unstructured
	status  map[string]any
}

func renderedState(t *testing.T, out string) rendered {
	t.Helper()
	var r rendered
	for _, doc := range strings.Split(out, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("render output: %v\n%s", err, doc)
		}
		switch m["render"] {
		case "create", "update":
			obj, _ := m["object"].(map[string]any)
			r.objects = append(r.objects, &unstructured.Unstructured{Object: obj})
		case "parent":
			if s, ok := m["status"].(map[string]any); ok {
				r.status = s
			}
		}
	}
	return r
}

// contentDiff compares what render wrote of an object with the object in the cluster: every
// field but metadata must be there as rendered (the API server may add defaults), and so
// must labels, annotations (but the engine's hash of what it applied, which render
// computes for a create) and the owner references.
func contentDiff(want, got *unstructured.Unstructured, timed []string) string {
	want = want.DeepCopy()
	for _, path := range timed {
		unstructured.RemoveNestedField(want.Object, strings.Split(path, ".")...)
	}
	for k, v := range want.Object {
		if k == "metadata" || k == "status" {
			continue
		}
		if d := subset(k, v, got.Object[k]); d != "" {
			return d
		}
	}
	for k, v := range want.GetLabels() {
		if got.GetLabels()[k] != v {
			return fmt.Sprintf("label %s: rendered %q, engine %q", k, v, got.GetLabels()[k])
		}
	}
	for k, v := range want.GetAnnotations() {
		if k != "metascript.dev/applied-hash" && got.GetAnnotations()[k] != v {
			return fmt.Sprintf("annotation %s: rendered %q, engine %q", k, v, got.GetAnnotations()[k])
		}
	}
	for _, w := range want.GetOwnerReferences() {
		found := false
		for _, g := range got.GetOwnerReferences() {
			found = found || g.Kind == w.Kind && g.Name == w.Name && g.UID == w.UID && reflect.DeepEqual(g.Controller, w.Controller)
		}
		if !found {
			return fmt.Sprintf("owner %s %s not on the engine's object", w.Kind, w.Name)
		}
	}
	return ""
}

// subset reports where want is not contained in got: maps by key, lists element by element
// (same length), scalars equal (numbers compared as printed).
func subset(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: rendered an object, engine %v", path, got)
		}
		for k, v := range w {
			if d := subset(path+"."+k, v, g[k]); d != "" {
				return d
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: rendered %v, engine %v", path, want, got)
		}
		for i := range w {
			if d := subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s: rendered %v, engine %v", path, want, got)
		}
	}
	return ""
}

// withoutTimes drops the condition times, which render fixes with --now.
func withoutTimes(status map[string]any) map[string]any {
	if status == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range status {
		out[k] = v
	}
	if conds, ok := status["conditions"].([]any); ok {
		var cs []any
		for _, c := range conds {
			m, _ := c.(map[string]any)
			cp := map[string]any{}
			for k, v := range m {
				if k != "lastTransitionTime" {
					cp[k] = v
				}
			}
			cs = append(cs, cp)
		}
		out["conditions"] = cs
	}
	return out
}
