package selector

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
	c := NewCache()
	matches := func(p *unstructured.Unstructured, app string) bool {
		t.Helper()
		sel, err := c.Get(p)
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
	if _, err := c.Get(bad); err == nil {
		t.Fatal("missing selector accepted")
	}
	if _, err := c.Get(bad); err == nil {
		t.Fatal("cached error lost")
	}
	c.Forget("u1")
	if len(c.m) != 0 {
		t.Fatalf("forget left %d entries", len(c.m))
	}
}

func TestCacheSelectingAll(t *testing.T) {
	c := NewCacheSelectingAll()
	for _, tc := range []struct {
		name string
		spec map[string]any
		ok   bool
	}{
		{"missing", map[string]any{}, true},
		{"null", map[string]any{"selector": nil}, true},
		{"empty", map[string]any{"selector": map[string]any{}}, true},
		{"not an object", map[string]any{"selector": "x"}, false},
	} {
		p := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p"}, "spec": tc.spec}}
		sel, err := c.Get(p)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", tc.name, err)
			continue
		}
		if err == nil && !sel.Matches(labels.Set{"any": "thing"}) {
			t.Errorf("%s: does not select everything", tc.name)
		}
	}
	if _, err := NewCache().Get(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"selector": map[string]any{}}}}); err == nil {
		t.Error("NewCache accepted an empty selector")
	}
}
