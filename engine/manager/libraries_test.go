package manager

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func libraryObject(ns, name, src string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metascript.dev/v1alpha1", "kind": "HookLibrary",
		"spec": map[string]any{"modules": []any{map[string]any{"name": "m", "starlark": src}}},
	}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestScopedLibrariesConfine: a namespaced controller finds only the libraries of its own
// namespace, a cluster-scoped one only cluster libraries; every name asked is recorded.
func TestScopedLibrariesConfine(t *testing.T) {
	namespaced := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cluster := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range []*unstructured.Unstructured{libraryObject("a", "util", "X = 1"), libraryObject("b", "other", "X = 2")} {
		if err := namespaced.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Add(libraryObject("", "shared", "X = 3")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		indexer cache.Indexer
		ns      string
		name    string
		found   bool
	}{
		{namespaced, "a", "util", true},
		{namespaced, "a", "other", false},  // namespace b's
		{namespaced, "a", "shared", false}, // a cluster library
		{namespaced, "b", "util", false},
		{cluster, "", "shared", true},
		{cluster, "", "util", false},
	}
	for _, c := range cases {
		s := &scopedLibraries{indexer: c.indexer, namespace: c.ns}
		lib, ok := s.Library(c.name)
		if ok != c.found {
			t.Errorf("namespace %q, library %s: found %v, want %v", c.ns, c.name, ok, c.found)
			continue
		}
		want := ""
		if ok {
			want = lib.Revision
		}
		if got, asked := s.names()[c.name]; !asked || got != want {
			t.Errorf("namespace %q, library %s: recorded %q (%v), want %q", c.ns, c.name, got, asked, want)
		}
	}
}

func TestLibraryOfRefusesAmbiguousModules(t *testing.T) {
	u := libraryObject("", "x", "X = 1")
	u.Object["spec"].(map[string]any)["modules"] = []any{map[string]any{"name": "m", "starlark": "X = 1", "javascript": "x"}}
	if _, err := libraryOf(u); err == nil {
		t.Fatal("a module with two languages was accepted")
	}
}

// TestScopedLibrariesLookUpOnce: one build sees one revision of a library, even when it is
// edited between two hooks' compiles, and its specs are what that revision held.
func TestScopedLibrariesLookUpOnce(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(libraryObject("", "util", "X = 1")); err != nil {
		t.Fatal(err)
	}
	s := &scopedLibraries{indexer: indexer}
	first, _ := s.Library("util")
	if err := indexer.Update(libraryObject("", "util", "X = 2")); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Library("util"); again.Revision != first.Revision {
		t.Fatalf("a second lookup found revision %s, the first %s", again.Revision, first.Revision)
	}
	if _, ok := s.Library("absent"); ok {
		t.Fatal("a missing library was found")
	}
	specs := s.specs()
	if len(specs) != 1 || specs["util"] == nil || specs["util"].Modules[0].Starlark != "X = 1" {
		t.Fatalf("specs %+v, want util as first found", specs)
	}
	if fresh, _ := (&scopedLibraries{indexer: indexer}).Library("util"); fresh.Revision == first.Revision {
		t.Fatal("a new build did not see the edit")
	}
}
