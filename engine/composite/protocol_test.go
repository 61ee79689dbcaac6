package composite

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
)

var (
	configMaps = protocol.ChildRule{Resource: resources.Resource{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}}
	namespaces = protocol.ChildRule{Resource: resources.Resource{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Namespaced: false}}
)

func parentIn(ns string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{}
	p.SetName("p")
	p.SetNamespace(ns)
	return p
}

func cm(name string, extra map[string]any) map[string]any {
	md := map[string]any{"name": name, "labels": map[string]any{"app": "x"}}
	for k, v := range extra {
		md[k] = v
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
}

func TestParseResponseRejectsWithAPath(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	for _, tc := range []struct {
		name   string
		parent *unstructured.Unstructured
		resp   map[string]any
		want   string
	}{
		{"unknown field", parentIn("ns"), map[string]any{"childs": []any{}}, "childs: unknown field"},
		{"status not object", parentIn("ns"), map[string]any{"status": "ok"}, "status: expected an object, got string"},
		{"children not list", parentIn("ns"), map[string]any{"children": map[string]any{}}, "children: expected a list, got object"},
		{"child not object", parentIn("ns"), map[string]any{"children": []any{"x"}}, "children[0]: expected an object, got string"},
		{"no apiVersion", parentIn("ns"), map[string]any{"children": []any{map[string]any{"kind": "ConfigMap"}}}, "children[0].apiVersion: required"},
		{"undeclared kind", parentIn("ns"), map[string]any{"children": []any{map[string]any{"apiVersion": "v1", "kind": "Secret"}}},
			"children[0]: v1 Secret is not among the controller's childResources"},
		{"no name", parentIn("ns"), map[string]any{"children": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{}}}},
			"children[0].metadata.name: required string"},
		{"name not string", parentIn("ns"), map[string]any{"children": []any{cm("a", nil), map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": int64(3)}}}},
			"children[1].metadata.name: required string"},
		{"bad name", parentIn("ns"), map[string]any{"children": []any{cm("Not_DNS", nil)}}, "children[0].metadata.name: \"Not_DNS\""},
		{"label not string", parentIn("ns"), map[string]any{"children": []any{cm("a", map[string]any{"labels": map[string]any{"app": int64(1)}})}},
			"children[0].metadata.labels.app: expected string, got int"},
		{"selector mismatch", parentIn("ns"), map[string]any{"children": []any{cm("a", map[string]any{"labels": map[string]any{"app": "y"}})}},
			"children[0].metadata.labels: map[app:y] do not match"},
		{"other namespace", parentIn("ns"), map[string]any{"children": []any{cm("a", map[string]any{"namespace": "other"})}},
			"children[0].metadata.namespace: \"other\" differs from the parent's namespace \"ns\""},
		{"cluster parent, no namespace", parentIn(""), map[string]any{"children": []any{cm("a", nil)}},
			"children[0].metadata.namespace: required: the parent is cluster-scoped"},
		{"cluster child with namespace", parentIn(""), map[string]any{"children": []any{map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "n", "namespace": "x", "labels": map[string]any{"app": "x"}}}}},
			"children[0].metadata.namespace: Namespace is cluster-scoped"},
		{"duplicate", parentIn("ns"), map[string]any{"children": []any{cm("a", nil), cm("a", nil)}}, "children[1]: duplicate of children[0]"},
		{"negative resync", parentIn("ns"), map[string]any{"resyncAfterSeconds": int64(-1)}, "resyncAfterSeconds: expected a number"},
		{"finalized not bool", parentIn("ns"), map[string]any{"finalized": "yes"}, "finalized: expected a boolean, got string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseResponse(tc.resp, tc.parent, []protocol.ChildRule{configMaps, namespaces}, sel, nil)
			if err == nil {
				t.Fatalf("accepted %v", tc.resp)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParseResponseAccepts(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	resp := map[string]any{
		"status":             map[string]any{"ready": true},
		"children":           []any{cm("a", nil), cm("b", map[string]any{"namespace": "ns"})},
		"resyncAfterSeconds": 1.5,
		"finalized":          true,
	}
	got, err := parseResponse(resp, parentIn("ns"), []protocol.ChildRule{configMaps}, sel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status == nil || !got.Finalized || got.ResyncAfter != 1500*time.Millisecond || len(got.children[0]) != 2 {
		t.Fatalf("parsed %+v", got)
	}
	if ns := got.children[0][0].GetNamespace(); ns != "ns" {
		t.Fatalf("namespace not defaulted to the parent's: %q", ns)
	}
}

func TestParseResponseAddsGeneratedSelectorLabels(t *testing.T) {
	extra := map[string]string{ControllerUIDLabel: "u1"}
	child := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}
	got, err := parseResponse(map[string]any{"children": []any{child}}, parentIn("ns"), []protocol.ChildRule{configMaps},
		labels.SelectorFromSet(extra), extra)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.children[0][0].GetLabels(); l[ControllerUIDLabel] != "u1" {
		t.Fatalf("labels = %v", l)
	}
}
