package apply

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
)

// TestNoOwner: a child written for NoOwner gets no owner reference, is judged up to date
// without one, and an observed object controlled by another is still refused.
func TestNoOwner(t *testing.T) {
	desired := &unstructured.Unstructured{Object: desiredWidget()}
	config, hash, err := configuration(NoOwner, desired)
	if err != nil {
		t.Fatal(err)
	}
	if refs, listed := config.Object["metadata"].(map[string]any)["ownerReferences"]; listed {
		t.Fatalf("configuration for NoOwner lists ownerReferences %v", refs)
	}
	if owned, _, _ := configuration(testOwner, desired); owned.GetAnnotations()[AppliedHashAnnotation] == hash {
		t.Error("the hash for NoOwner equals the hash with an owner")
	}

	observed := config.DeepCopy()
	observed.SetUID("child-uid")
	observed.SetResourceVersion("7")
	if same, err := UpToDate(NoOwner, desired, observed); err != nil || !same {
		t.Errorf("UpToDate(NoOwner) of the stored configuration = %v, %v; want true", same, err)
	}
	step, err := Plan(configMaps, NoOwner, desired, observed, v1alpha1.ChildUpdateInPlace)
	if err != nil {
		t.Fatal(err)
	}
	if action, _, done := step.Done(); !done || action != Unchanged {
		t.Errorf("Plan over the stored configuration: %v (done %v), want Unchanged", action, done)
	}

	changed := &unstructured.Unstructured{Object: desiredWidget()}
	changed.Object["spec"].(map[string]any)["size"] = int64(4)
	step, err = Plan(configMaps, NoOwner, changed, observed, v1alpha1.ChildUpdateInPlace)
	if err != nil {
		t.Fatal(err)
	}
	if action, obj := step.Planned(); action != Updated || len(obj.GetOwnerReferences()) != 0 {
		t.Errorf("Plan of a change: %v with ownerReferences %v, want Updated with none", action, obj.GetOwnerReferences())
	}

	controlled := observed.DeepCopy()
	yes := true
	controlled.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Other", Name: "o", UID: "o-uid", Controller: &yes}})
	if _, err := Plan(configMaps, NoOwner, changed, controlled, v1alpha1.ChildUpdateInPlace); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Plan over another's child = %v, want ErrNotOwned", err)
	}
	if _, err := Plan(configMaps, NoOwner, nil, controlled, v1alpha1.ChildUpdateInPlace); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Plan deleting another's child = %v, want ErrNotOwned", err)
	}
	if _, _, err := configuration(metav1.OwnerReference{}, desired); !errors.Is(err, ErrInvalid) {
		t.Errorf("configuration without an owner = %v, want ErrInvalid", err)
	}
}
