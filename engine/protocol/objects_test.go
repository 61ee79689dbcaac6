package protocol

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/resources"
)

// TestObjectsDuplicates checks the duplicate check of short and long lists: an object
// named twice in one rule is refused with the index of the first, while one name in two
// rules, or in two namespaces, is not a duplicate.
func TestObjectsDuplicates(t *testing.T) {
	secrets := resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespaced: true}
	rules := []ChildRule{{Resource: configMaps}, {Resource: secrets}}
	object := func(kind, namespace, name string) any {
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"namespace": namespace, "name": name}}
	}
	for _, n := range []int{3, 40} {
		var list []any
		for i := range n {
			list = append(list, object("ConfigMap", "ns", fmt.Sprintf("c%d", i)))
		}
		// Not duplicates: another rule, another namespace (a cluster-scoped parent's).
		list = append(list, object("Secret", "ns", "c1"), object("ConfigMap", "other", "c1"))
		out, err := Objects(map[string]any{"children": list}, "children", parentIn(""), rules, "childResources", nil, nil)
		if err != nil {
			t.Fatalf("%d objects: %v", n, err)
		}
		if len(out[0]) != n+1 || len(out[1]) != 1 {
			t.Errorf("%d objects: grouped %d and %d", n, len(out[0]), len(out[1]))
		}
		list = append(list, object("ConfigMap", "ns", "c1"))
		_, err = Objects(map[string]any{"children": list}, "children", parentIn(""), rules, "childResources", nil, nil)
		want := fmt.Sprintf("children[%d]: duplicate of children[1]", n+2)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d objects: err = %v, want %q", n, err, want)
		}
	}
}

// TestSetStringsCopies checks that SetStrings leaves the map it replaces as it was, so
// that objects sharing it do not see another's labels.
func TestSetStringsCopies(t *testing.T) {
	shared := map[string]any{"app": "a"}
	a := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"labels": shared}}}
	b := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"labels": shared}}}
	SetStrings(a, "labels", map[string]string{"mark": "x"})
	if got := a.GetLabels(); len(got) != 2 || got["mark"] != "x" || got["app"] != "a" {
		t.Errorf("labels set: %v", got)
	}
	if len(shared) != 1 || len(b.GetLabels()) != 1 {
		t.Errorf("the shared map changed: %v", shared)
	}
	SetStrings(b, "annotations", map[string]string{"note": "y"})
	if got := b.GetAnnotations(); got["note"] != "y" {
		t.Errorf("annotations created: %v", got)
	}
}
