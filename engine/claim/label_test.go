package claim

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestDecideByLabel covers the label table of label.go: children outside a namespaced
// parent's namespace, and orphans carrying ParentUIDLabel in the ControllerRef table.
func TestDecideByLabel(t *testing.T) {
	mark := &Mark{Key: "metascript.dev/compositecontroller", Value: "tenants", Label: true}
	selector := labels.SelectorFromSet(labels.Set{"app": "a"})
	beyond := Parent{UID: parentUID, Namespace: "a", Selector: selector, Beyond: mark}
	deleting := beyond
	deleting.Deleting = true
	ours := labels.Set{ParentUIDLabel: string(parentUID), mark.Key: mark.Value, "app": "a"}
	otherController := labels.Set{ParentUIDLabel: string(parentUID), mark.Key: "other", "app": "a"}
	otherParent := labels.Set{ParentUIDLabel: string(otherUID), mark.Key: mark.Value, "app": "a"}
	unmarked := labels.Set{ParentUIDLabel: string(parentUID), "app": "a"}
	mine := []metav1.OwnerReference{ref(parentUID, true)}
	theirs := []metav1.OwnerReference{ref(otherUID, true)}

	tests := []struct {
		name   string
		parent Parent
		child  Child
		want   Decision
	}{
		{"labelled for this parent and controller, other namespace", beyond, Child{Namespace: "b", Labels: ours}, Keep},
		{"labelled for this parent and controller, cluster-scoped", beyond, Child{Labels: ours}, Keep},
		{"kept while the parent is deleting", deleting, Child{Namespace: "b", Labels: ours}, Keep},
		{"kept while the child is deleting", beyond, Child{Namespace: "b", Labels: ours, Deleting: true}, Keep},
		{"kept with a plain owner reference to something else", beyond,
			Child{Namespace: "b", Labels: ours, OwnerReferences: []metav1.OwnerReference{ref(otherUID, false)}}, Keep},
		{"another controller's child of this parent", beyond, Child{Namespace: "b", Labels: otherController}, Ignore},
		{"the parent UID label without the mark", beyond, Child{Namespace: "b", Labels: unmarked}, Ignore},
		{"another parent's child", beyond, Child{Namespace: "b", Labels: otherParent}, Ignore},
		{"unlabelled object of the same name: never adopted", beyond, Child{Namespace: "b", Labels: labels.Set{"app": "a"}}, Ignore},
		{"unlabelled cluster-scoped object: never adopted", beyond, Child{}, Ignore},
		{"labelled but controlled by another", beyond, Child{Namespace: "b", Labels: ours, OwnerReferences: theirs}, Ignore},
		{"labelled but with this parent's ControllerRef across namespaces", beyond, Child{Namespace: "b", Labels: ours, OwnerReferences: mine}, Ignore},
		{"a mark that is an annotation does not claim by label", beyond,
			Child{Namespace: "b", Labels: unmarked, Annotations: labels.Set{mark.Key: mark.Value}}, Ignore},
		{"without Beyond, a labelled child outside is ignored", Parent{UID: parentUID, Namespace: "a", Selector: selector},
			Child{Namespace: "b", Labels: ours}, Ignore},
		{"a parent with no UID claims nothing", Parent{Namespace: "a", Selector: selector, Beyond: mark},
			Child{Namespace: "b", Labels: labels.Set{ParentUIDLabel: "", mark.Key: mark.Value}}, Ignore},

		// Inside the parent's namespace the ControllerRef table decides, and an orphan
		// claimed by label is never adopted.
		{"inside, owned: ControllerRef table", beyond, Child{Namespace: "a", Labels: labels.Set{"app": "a"}, OwnerReferences: mine}, Keep},
		{"inside, matching orphan: adopted", beyond, Child{Namespace: "a", Labels: labels.Set{"app": "a"}}, Adopt},
		{"inside, matching orphan labelled for another parent: ignored", beyond, Child{Namespace: "a", Labels: otherParent}, Ignore},
		{"cluster-scoped parent, matching orphan labelled for a parent: ignored",
			Parent{UID: parentUID, Selector: selector}, Child{Namespace: "b", Labels: otherParent}, Ignore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.parent, tt.child); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecideByLabelOfObjects reads the labels of an unstructured child in place, as the
// engine does.
func TestDecideByLabelOfObjects(t *testing.T) {
	mark := &Mark{Key: "k", Value: "v", Label: true}
	child := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"name": "ns-b", "labels": map[string]any{ParentUIDLabel: string(parentUID), "k": "v"}}}}
	p := Parent{UID: parentUID, Namespace: "a", Beyond: mark}
	if got := Decide(p, ChildOf(child)); got != Keep {
		t.Errorf("Decide = %v, want Keep", got)
	}
}

func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		parent, child string
		want          bool
	}{
		{"a", "a", false},
		{"a", "b", true},
		{"a", "", true},
		{"", "b", false},
		{"", "", false},
	} {
		if got := Outside(tc.parent, tc.child); got != tc.want {
			t.Errorf("Outside(%q, %q) = %v, want %v", tc.parent, tc.child, got, tc.want)
		}
	}
}
