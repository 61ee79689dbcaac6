package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/apis/v1alpha1"
)

// TestStepPlanned: what Planned says Send would do, and the object it would send, for each
// row of Plan's table that sends a request, and for a step that is done.
func TestStepPlanned(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "test/v1", Kind: "Parent", Name: "p", UID: types.UID("p-uid")}
	res := Resource{Namespaced: true}
	desired := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "ns"}, "data": map[string]any{"k": v}}}
	}
	stored := func(v string) *unstructured.Unstructured {
		s, err := Plan(res, owner, desired(v), nil, v1alpha1.ChildUpdateInPlace)
		if err != nil {
			t.Fatal(err)
		}
		_, obj := s.Planned()
		obj = obj.DeepCopy()
		obj.SetUID("c-uid")
		return obj
	}
	tests := []struct {
		name              string
		desired, observed *unstructured.Unstructured
		method            v1alpha1.ChildUpdateMethod
		want              Action
		wantHash          string // prefix of the applied-hash annotation of the object; "" for none
	}{
		{name: "new child", desired: desired("1"), method: v1alpha1.ChildUpdateInPlace, want: Created, wantHash: CreatedHashPrefix},
		{name: "up to date", desired: desired("1"), observed: stored("1"), method: v1alpha1.ChildUpdateInPlace, want: Unchanged, wantHash: CreatedHashPrefix},
		{name: "in place", desired: desired("2"), observed: stored("1"), method: v1alpha1.ChildUpdateInPlace, want: Updated},
		{name: "recreate deletes first", desired: desired("2"), observed: stored("1"), method: v1alpha1.ChildUpdateRecreate, want: Deleted, wantHash: CreatedHashPrefix},
		{name: "on delete leaves it", desired: desired("2"), observed: stored("1"), method: v1alpha1.ChildUpdateOnDelete, want: Skipped, wantHash: CreatedHashPrefix},
		{name: "no longer desired", observed: stored("1"), method: v1alpha1.ChildUpdateInPlace, want: Deleted, wantHash: CreatedHashPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Plan(res, owner, tt.desired, tt.observed, tt.method)
			if err != nil {
				t.Fatal(err)
			}
			action, obj := s.Planned()
			if action != tt.want {
				t.Fatalf("action %s, want %s", action, tt.want)
			}
			hash := obj.GetAnnotations()[AppliedHashAnnotation]
			if len(hash) < 64 || hash[:len(hash)-64] != tt.wantHash {
				t.Errorf("applied hash %q, want the prefix %q", hash, tt.wantHash)
			}
			if tt.want == Created || tt.want == Updated {
				if ref := obj.GetOwnerReferences(); len(ref) != 1 || ref[0].UID != owner.UID || ref[0].Controller == nil || !*ref[0].Controller {
					t.Errorf("owner references %v, want the parent's ControllerRef", ref)
				}
			}
		})
	}
}

// TestDecorated: the target as Decorate leaves it, and whether it writes, from the target
// alone.
func TestDecorated(t *testing.T) {
	record := DecorationRecord("d")
	target := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "t", "uid": "t-uid", "labels": map[string]any{"user": "keep", "drop": "me"}},
		"status":   map[string]any{"theirs": "kept", "nested": map[string]any{"a": "1"}}}}
	d := Decoration{Labels: map[string]*string{"mine": str("1"), "drop": nil}, Annotations: map[string]*string{"note": str("x")},
		Status: map[string]any{"nested": map[string]any{"b": "2"}}}
	got, changed := Decorated(target, record, d)
	if !changed {
		t.Fatal("a target without the decoration: no write, want one")
	}
	if l := got.GetLabels(); len(l) != 2 || l["user"] != "keep" || l["mine"] != "1" {
		t.Errorf("labels %v, want user=keep, mine=1", l)
	}
	if a := got.GetAnnotations(); a["note"] != "x" || a[record] == "" {
		t.Errorf("annotations %v, want note=x and the record", a)
	}
	status := got.Object["status"].(map[string]any)
	if status["theirs"] != "kept" || status["nested"].(map[string]any)["a"] != "1" || status["nested"].(map[string]any)["b"] != "2" {
		t.Errorf("status %v, want the decorator's fields merged into the target's", status)
	}
	if _, ok := target.GetLabels()["mine"]; ok {
		t.Error("the target was modified")
	}
	if again, changed := Decorated(got, record, d); changed || again.GetAnnotations()[record] != got.GetAnnotations()[record] {
		t.Error("a decorated target: a write, want none")
	}
}
