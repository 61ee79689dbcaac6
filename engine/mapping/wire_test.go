package mapping

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
func cached(apiVersion, kind, name string, rest map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range rest {
		o.Object[k] = v
	}
	o.SetName(name)
	o.SetNamespace("ns")
	o.SetUID(types.UID("uid-" + name))
	o.SetResourceVersion("7")
	o.SetGeneration(2)
	o.SetCreationTimestamp(metav1.Unix(1700000000, 0))
	o.SetLabels(map[string]string{ControllerLabel: "m", MapKeyLabel: "uid-in"})
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Parent", Name: "p", UID: "uid-p", Controller: &yes}})
	return o
}

// TestRequestsAreTheWireTypes: the map and tombstone requests the engine builds have the
// shapes of hooks.MapRequest and hooks.TombstoneRequest, down to each object's metadata.
func TestRequestsAreTheWireTypes(t *testing.T) {
	k := testKind()
	k.controller = cached("metascript.dev/v1alpha1", "MapController", "m", map[string]any{"spec": map[string]any{}}).Object
	d := &reconcile.Gathered{Parent: cached("examples.metascript.dev/v1", "Parent", "p", map[string]any{"spec": map[string]any{"ttl": "1h"}})}
	in := cached("v1", "ConfigMap", "in", map[string]any{"data": map[string]any{"k": "v"}})
	outputs := &group{byRule: map[int][]*unstructured.Unstructured{0: {cached("test.metascript.dev/v1", "Copy", "out", map[string]any{"spec": map[string]any{}})}}}

	mapCall := k.call(d, &job{key: "uid-in", input: &input{obj: in, key: "uid-in"}, group: outputs})
	if mapCall.Hook != "map" {
		t.Fatalf("an input's call is to %s", mapCall.Hook)
	}
	if err := hooks.Conforms(mapCall.Request, &hooks.MapRequest{}); err != nil {
		t.Errorf("map: %v", err)
	}
	tombstoneCall := k.call(d, &job{key: "uid-in", group: outputs})
	if tombstoneCall.Hook != "tombstone" {
		t.Fatalf("a detached key's call is to %s", tombstoneCall.Hook)
	}
	if err := hooks.Conforms(tombstoneCall.Request, &hooks.TombstoneRequest{}); err != nil {
		t.Errorf("tombstone: %v", err)
	}
}

// TestWireTypeResponsesAreAccepted: responses using every field of hooks.MapResponse and
// hooks.TombstoneResponse are ones the engine accepts.
func TestWireTypeResponsesAreAccepted(t *testing.T) {
	k := testKind()
	out := map[string]any{"apiVersion": "test.metascript.dev/v1", "kind": "Copy", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{"n": 1.0}}
	resp := map[string]any{"outputs": []any{out}, "resyncAfterSeconds": 5.0,
		"events": []any{map[string]any{"type": "Normal", "reason": "Mapped", "message": "input a mapped"}}}
	if err := hooks.Conforms(resp, &hooks.MapResponse{}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := k.parseMap(resp, parentIn("ns"), "key1"); err != nil {
		t.Fatalf("the engine refuses the map response: %v", err)
	}

	keep := map[string]any{"outputs": []any{map[string]any{"apiVersion": "test.metascript.dev/v1", "kind": "Copy", "metadata": map[string]any{"name": "a"}}},
		"resyncAfterSeconds": 60.0, "events": []any{map[string]any{"reason": "Kept", "message": "a kept"}}}
	if err := hooks.Conforms(keep, &hooks.TombstoneResponse{}); err != nil {
		t.Fatal(err)
	}
	g := &group{byRule: map[int][]*unstructured.Unstructured{0: {object("a", "1")}}}
	if _, _, _, err := k.parseTombstone(keep, parentIn("ns"), g); err != nil {
		t.Fatalf("the engine refuses the tombstone response: %v", err)
	}
}
