package enginetest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Fanouts is the parent resource of the convergence benchmarks (test/converge and
// test/scale, testdata/crds/fanouts.yaml): a Fanout's controller keeps spec.children
// ConfigMaps labelled fanout=<its name>.
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
