package decorator

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/apis/hooks"
	"metascript.dev/metascript/engine/reconcile"
)

// cached is an object as the engine's cache holds it: the metadata the API server sets
// (managedFields dropped), and fields of its own.
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
	o.SetAnnotations(map[string]string{MarkAnnotation: "spo"})
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "t", UID: "uid-t", Controller: &yes}})
	return o
}

// TestRequestIsTheWireType: the sync and finalize request the engine builds has the shape
// of hooks.DecoratorRequest, down to each object's metadata.
func TestRequestIsTheWireType(t *testing.T) {
	k := testKind()
	k.controller = cached("metascript.dev/v1alpha1", "DecoratorController", "", "spo", map[string]any{"spec": map[string]any{}}).Object
	target := cached("v1", "Pod", "ns", "t", map[string]any{"spec": map[string]any{}, "status": map[string]any{"phase": "Running"}})
	attachment := cached("v1", "Service", "ns", "t", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}})
	related := map[string]any{"ConfigMap.v1": map[string]any{"c": cached("v1", "ConfigMap", "ns", "c", nil).Object}}
	for _, finalizing := range []bool{false, true} {
		asked, err := k.Ask(&reconcile.Gathered{Parent: target, Hook: "sync", Finalizing: finalizing,
			Observed: map[int][]*unstructured.Unstructured{0: {attachment}}, Related: related})
		if err != nil {
			t.Fatal(err)
		}
		if err := hooks.Conforms(asked.Calls()[0].Request, &hooks.DecoratorRequest{}); err != nil {
			t.Errorf("finalizing %v: %v", finalizing, err)
		}
	}
}

// TestWireTypeResponseIsAccepted: a response using every field of hooks.DecoratorResponse
// is one the engine accepts.
func TestWireTypeResponseIsAccepted(t *testing.T) {
	resp := map[string]any{
		"labels":             map[string]any{"team": "web", "old": nil},
		"annotations":        map[string]any{"example.com/port": "80"},
		"status":             map[string]any{"decorated": true},
		"attachments":        []any{svc("t", nil)},
		"resyncAfterSeconds": 30.0,
		"finalized":          true,
		"events":             []any{map[string]any{"reason": "Decorated", "message": "labelled"}},
	}
	if err := hooks.Conforms(resp, &hooks.DecoratorResponse{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testKind().parseResponse(resp, targetIn("ns")); err != nil {
		t.Fatalf("the engine refuses it: %v", err)
	}
}
