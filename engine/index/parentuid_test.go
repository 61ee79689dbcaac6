package index

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/claim"
)

func TestParentUIDIndex(t *testing.T) {
	controller := map[string]any{"apiVersion": "x/v1", "kind": "P", "name": "p", "uid": "u1", "controller": true}
	labelled := func(uid any) map[string]any {
		return map[string]any{"labels": map[string]any{claim.ParentUIDLabel: uid, "app": "a"}}
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want []string
	}{
		{"labelled, cluster-scoped", obj("", labelled("p1"), nil), []string{"p1"}},
		{"labelled, namespaced", obj("b", labelled("p1"), nil), []string{"p1"}},
		{"unlabelled", obj("b", nil, nil), nil},
		{"empty label", obj("b", labelled(""), nil), nil},
		{"label not a string", obj("b", labelled(int64(1)), nil), nil},
		{"labelled but controlled: the ControllerRef says whose", obj("b", map[string]any{
			"labels": map[string]any{claim.ParentUIDLabel: "p1"}, "ownerReferences": []any{controller}}, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := parentUID(tc.obj)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ParentUID %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParentUIDLookup finds a parent's labelled children through a client-go indexer, and
// loses one whose label is removed.
func TestParentUIDLookup(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{ParentUID: parentUID})
	a := obj("b", map[string]any{"labels": map[string]any{claim.ParentUIDLabel: "p1"}}, nil)
	a.SetName("a")
	c := obj("", map[string]any{"labels": map[string]any{claim.ParentUIDLabel: "p1"}}, nil)
	c.SetName("c")
	other := obj("b", map[string]any{"labels": map[string]any{claim.ParentUIDLabel: "p2"}}, nil)
	other.SetName("other")
	for _, o := range []*unstructured.Unstructured{a, c, other} {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := idx.IndexKeys(ParentUID, "p1")
	slices.Sort(keys)
	if want := []string{"b/a", "c"}; !slices.Equal(keys, want) {
		t.Fatalf("children of p1: %v, want %v", keys, want)
	}
	unlabelled := a.DeepCopy()
	unlabelled.SetLabels(nil)
	if err := idx.Update(unlabelled); err != nil {
		t.Fatal(err)
	}
	if keys, _ := idx.IndexKeys(ParentUID, "p1"); !slices.Equal(keys, []string{"c"}) {
		t.Fatalf("children of p1 after a's label went: %v, want [c]", keys)
	}
}
