package enginetest

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Fanouts is the parent resource of the benchmarks that run an engine at scale (test/converge,
// test/scale, test/tenants, test/neighbors) and of test/leader, defined by the CRD in
// FanoutCRDs: a Fanout's controller keeps spec.children ConfigMaps labelled
// fanout=<its name>.
var Fanouts = schema.GroupVersionResource{Group: "bench.metascript.dev", Version: "v1", Resource: "fanouts"}

// Fanout is the Fanout called name that asks for children ConfigMaps.
func Fanout(name string, children int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.metascript.dev/v1", "kind": "Fanout",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"fanout": name}},
			"children": int64(children),
		},
	}}
}

// FanoutCRDs is the folder holding the Fanout CRD, in the repository whose root is root.
func FanoutCRDs(root string) string { return filepath.Join(root, "test", "enginetest", "crds") }
