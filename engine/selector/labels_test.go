package selector

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Labels matches as the copy GetLabels makes does.
func TestLabelsMatchAsACopy(t *testing.T) {
	objects := map[string]*unstructured.Unstructured{
		"labelled":    {Object: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "db"}}}},
		"no labels":   {Object: map[string]any{"metadata": map[string]any{"name": "x"}}},
		"no metadata": {Object: map[string]any{}},
		"empty value": {Object: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": ""}}}},
	}
	for _, sel := range []string{"", "app=web", "app!=web", "app in (web,api)", "app notin (web)", "app", "!app",
		"app=web,tier=db", "tier=cache", "app="} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		for name, obj := range objects {
			if got, want := s.Matches(Labels(obj)), s.Matches(labels.Set(obj.GetLabels())); got != want {
				t.Errorf("%q on %s: %v, the copy %v", sel, name, got, want)
			}
		}
	}
	l := Labels(objects["labelled"])
	if v, ok := l.Lookup("tier"); !ok || v != "db" || !l.Has("app") || l.Get("missing") != "" || l.Has("missing") {
		t.Errorf("Lookup(tier) = %q, %v; Has(app) %v; Has(missing) %v", v, ok, l.Has("app"), l.Has("missing"))
	}
}
