package reconcile

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNewStatus checks that newStatus finds an unchanged status unchanged, and that a new
// status it returns stays as it was while later calls build theirs.
func TestNewStatus(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p", "generation": int64(3)},
		"status":   map[string]any{"children": int64(5), "observedGeneration": int64(3)},
	}}
	r := &Runner{}
	for range 3 {
		if status, changed := r.newStatus(parent, &Outcome{Status: map[string]any{"children": 5.0}}); changed || status != nil {
			t.Fatalf("unchanged status: changed %v, %v", changed, status)
		}
	}
	status, changed := r.newStatus(parent, &Outcome{Status: map[string]any{"children": int64(6)}})
	want := map[string]any{"children": int64(6), "observedGeneration": int64(3)}
	if !changed || !reflect.DeepEqual(status, want) {
		t.Fatalf("changed status: changed %v, %v", changed, status)
	}
	for range 3 {
		r.newStatus(parent, &Outcome{Status: map[string]any{"children": int64(5), "other": "x"}})
	}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("the status returned changed to %v", status)
	}
}
