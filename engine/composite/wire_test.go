package composite

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/apis/hooks"
	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/protocol"
)

// cached is an object as the engine's cache holds it: every metadata field the API server
// sets (managedFields dropped), and fields of its own.
func cached(apiVersion, kind, ns, name string, rest map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range rest {
		o.Object[k] = v
	}
	o.SetName(name)
	o.SetNamespace(ns)
	o.SetUID(types.UID("uid-" + name))
	o.SetResourceVersion("7")
	o.SetGeneration(2)
	o.SetCreationTimestamp(metav1.Unix(1700000000, 0))
	o.SetLabels(map[string]string{"app": "x"})
	o.SetAnnotations(map[string]string{"note": "n"})
	o.SetFinalizers([]string{FinalizerPrefix + "c"})
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "o", UID: "uid-o", Controller: &yes, BlockOwnerDeletion: &yes}})
	return o
}

// TestRequestIsTheWireType: the sync and finalize request the engine builds has the shape
// of hooks.CompositeRequest, down to each object's metadata.
func TestRequestIsTheWireType(t *testing.T) {
	parent := cached("examples.metascript.dev/v1", "Website", "ns", "p", map[string]any{"spec": map[string]any{"port": int64(80)}})
	parent.SetDeletionTimestamp(&metav1.Time{Time: metav1.Unix(1700000100, 0).Time})
	grace := int64(30)
	parent.SetDeletionGracePeriodSeconds(&grace)
	controller := cached("metascript.dev/v1alpha1", "CompositeController", "", "c", map[string]any{"spec": map[string]any{}})
	child := cached("v1", "ConfigMap", "ns", "a", map[string]any{"data": map[string]any{"k": "v"}})
	related := map[string]any{"Secret.v1": map[string]any{"s": cached("v1", "Secret", "ns", "s", nil).Object}}
	for _, finalizing := range []bool{false, true} {
		req := syncRequest(controller.Object, parent, []protocol.ChildRule{configMaps, namespaces},
			map[int][]*unstructured.Unstructured{0: {child}}, related, v1alpha1.HookVersionV1, finalizing)
		if err := hooks.Conforms(req, &hooks.CompositeRequest{}); err != nil {
			t.Errorf("finalizing %v: %v", finalizing, err)
		}
	}
}

// TestWireTypeResponseIsAccepted: a response using every field of hooks.CompositeResponse
// is one the engine accepts.
func TestWireTypeResponseIsAccepted(t *testing.T) {
	resp := map[string]any{
		"status":             map[string]any{"ready": true},
		"children":           []any{cm("a", nil), cm("b", map[string]any{"namespace": "ns", "annotations": map[string]any{"k": "v"}}), cm("c", nil)},
		"resyncAfterSeconds": 1.5,
		"finalized":          true,
		"events":             []any{map[string]any{"type": "Warning", "reason": "QuotaLow", "message": "raise it"}},
		"order": []any{map[string]any{"child": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "namespace": "ns"},
			"after": []any{
				map[string]any{"child": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "a"}},
				map[string]any{"child": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
					"ready": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Up"}}}},
			}},
			map[string]any{"child": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}, "after": []any{
				map[string]any{"child": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "a"},
					"ready": map[string]any{"path": "data.phase", "value": "Active"}}}},
		},
	}
	if err := hooks.Conforms(resp, &hooks.CompositeResponse{}); err != nil {
		t.Fatal(err)
	}
	if _, err := parseResponse(resp, parentIn("ns"), []protocol.ChildRule{configMaps}, labels.SelectorFromSet(labels.Set{"app": "x"}), nil); err != nil {
		t.Fatalf("the engine refuses it: %v", err)
	}
}
