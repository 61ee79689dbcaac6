package composite

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

func selectorParent(rv, app string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p", "uid": "u1", "resourceVersion": rv},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": app}}},
	}}
	return p
}

func TestSelectorCache(t *testing.T) {
	c := newSelectorCache()
	matches := func(p *unstructured.Unstructured, app string) bool {
		t.Helper()
		sel, err := c.get(p)
		if err != nil {
			t.Fatal(err)
		}
		return sel.Matches(labels.Set{"app": app})
	}
	if !matches(selectorParent("1", "a"), "a") {
		t.Fatal("selector of rv 1 does not match its label")
	}
	// The same resourceVersion is served from the cache: a changed object under an
	// unchanged resourceVersion (which the API server never sends) shows it.
	if !matches(selectorParent("1", "b"), "a") {
		t.Fatal("rv 1 parsed again")
	}
	if !matches(selectorParent("2", "b"), "b") {
		t.Fatal("rv 2 not parsed again")
	}
	// No resourceVersion: parsed every time, never cached.
	if !matches(selectorParent("", "c"), "c") || !matches(selectorParent("2", "b"), "b") {
		t.Fatal("an object without resourceVersion replaced the cached entry")
	}
	bad := selectorParent("3", "a")
	delete(bad.Object, "spec")
	if _, err := c.get(bad); err == nil {
		t.Fatal("missing selector accepted")
	}
	if _, err := c.get(bad); err == nil {
		t.Fatal("cached error lost")
	}
	c.forget("u1")
	if len(c.m) != 0 {
		t.Fatalf("forget left %d entries", len(c.m))
	}
}
