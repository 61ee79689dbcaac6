package claim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

const (
	parentUID types.UID = "parent-uid"
	otherUID  types.UID = "other-uid"
)

func ref(uid types.UID, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "test/v1", Kind: "P", Name: string(uid), UID: uid, Controller: &controller}
}

func TestDecide(t *testing.T) {
	selector := labels.SelectorFromSet(labels.Set{"app": "a"})
	matching := labels.Set{"app": "a", "extra": "x"}
	other := labels.Set{"app": "b"}
	mine := []metav1.OwnerReference{ref(parentUID, true)}
	theirs := []metav1.OwnerReference{ref(otherUID, true)}
	mark := &Mark{Key: "metascript.dev/decorator-controller", Value: "d"}
	marked := labels.Set{mark.Key: "d"}
	labelMark := &Mark{Key: "m", Value: "v", Label: true}

	tests := []struct {
		name   string
		parent Parent
		child  Child
		want   Decision
	}{
		// Owned by another controller: never touched, whatever else holds.
		{"other controller, matching", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: theirs, Labels: matching}, Ignore},
		{"other controller, not matching", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: theirs, Labels: other}, Ignore},
		{"other controller, parent deleting", Parent{UID: parentUID, Selector: selector, Deleting: true},
			Child{OwnerReferences: theirs, Labels: matching}, Ignore},
		{"other controller, child deleting", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: theirs, Labels: matching, Deleting: true}, Ignore},
		{"other controller listed after a plain owner reference to this parent",
			Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: []metav1.OwnerReference{ref(parentUID, false), ref(otherUID, true)}, Labels: matching}, Ignore},

		// Owned by this parent.
		{"mine, matching", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: mine, Labels: matching}, Keep},
		{"mine, matching, parent deleting", Parent{UID: parentUID, Selector: selector, Deleting: true},
			Child{OwnerReferences: mine, Labels: matching}, Keep},
		{"mine, matching, child deleting", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: mine, Labels: matching, Deleting: true}, Keep},
		{"mine, not matching", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: mine, Labels: other}, Release},
		{"mine, no labels", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: mine}, Release},
		{"mine, not matching, child deleting", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: mine, Labels: other, Deleting: true}, Release},
		{"mine, not matching, parent deleting", Parent{UID: parentUID, Selector: selector, Deleting: true},
			Child{OwnerReferences: mine, Labels: other}, Ignore},
		{"mine among other plain owners", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: []metav1.OwnerReference{ref(otherUID, false), ref(parentUID, true)}, Labels: matching}, Keep},

		// Orphans.
		{"orphan, matching", Parent{UID: parentUID, Selector: selector},
			Child{Labels: matching}, Adopt},
		{"orphan with plain owner references, matching", Parent{UID: parentUID, Selector: selector},
			Child{OwnerReferences: []metav1.OwnerReference{ref(otherUID, false), ref(parentUID, false)}, Labels: matching}, Adopt},
		{"orphan, not matching", Parent{UID: parentUID, Selector: selector},
			Child{Labels: other}, Ignore},
		{"orphan, matching, parent deleting", Parent{UID: parentUID, Selector: selector, Deleting: true},
			Child{Labels: matching}, Ignore},
		{"orphan, matching, child deleting", Parent{UID: parentUID, Selector: selector},
			Child{Labels: matching, Deleting: true}, Ignore},
		{"orphan, not matching, parent deleting", Parent{UID: parentUID, Selector: selector, Deleting: true},
			Child{Labels: other}, Ignore},

		// Selectors at the edges.
		{"nil selector selects nothing", Parent{UID: parentUID},
			Child{Labels: matching}, Ignore},
		{"nil selector releases what it owns", Parent{UID: parentUID},
			Child{OwnerReferences: mine, Labels: matching}, Release},
		{"everything selector adopts an unlabelled orphan", Parent{UID: parentUID, Selector: labels.Everything()},
			Child{}, Adopt},

		// Namespaces.
		{"namespaced parent, orphan in its namespace", Parent{UID: parentUID, Namespace: "a", Selector: selector},
			Child{Namespace: "a", Labels: matching}, Adopt},
		{"namespaced parent, orphan in another namespace", Parent{UID: parentUID, Namespace: "a", Selector: selector},
			Child{Namespace: "b", Labels: matching}, Ignore},
		{"namespaced parent, cluster-scoped orphan", Parent{UID: parentUID, Namespace: "a", Selector: selector},
			Child{Labels: matching}, Ignore},
		{"namespaced parent, its ref on a child in another namespace", Parent{UID: parentUID, Namespace: "a", Selector: selector},
			Child{Namespace: "b", OwnerReferences: mine, Labels: other}, Ignore},
		{"cluster-scoped parent, orphan in any namespace", Parent{UID: parentUID, Selector: selector},
			Child{Namespace: "b", Labels: matching}, Adopt},

		// Claiming by mark: a parent shared by several controllers.
		{"mark, mine and marked", Parent{UID: parentUID, Mark: mark},
			Child{OwnerReferences: mine, Annotations: marked}, Keep},
		{"mark, mine and marked, parent deleting", Parent{UID: parentUID, Mark: mark, Deleting: true},
			Child{OwnerReferences: mine, Annotations: marked}, Keep},
		{"mark, mine but unmarked: another controller's child of the parent", Parent{UID: parentUID, Mark: mark},
			Child{OwnerReferences: mine}, Ignore},
		{"mark, mine but marked by another controller", Parent{UID: parentUID, Mark: mark},
			Child{OwnerReferences: mine, Annotations: labels.Set{mark.Key: "other"}}, Ignore},
		{"mark, marked but another controller's", Parent{UID: parentUID, Mark: mark},
			Child{OwnerReferences: theirs, Annotations: marked}, Ignore},
		{"mark, marked orphan is never adopted", Parent{UID: parentUID, Mark: mark},
			Child{Annotations: marked, Labels: matching}, Ignore},
		{"mark wins over a selector", Parent{UID: parentUID, Mark: mark, Selector: selector},
			Child{Labels: matching}, Ignore},
		{"label mark, mine and labelled", Parent{UID: parentUID, Mark: labelMark},
			Child{OwnerReferences: mine, Labels: labels.Set{"m": "v"}}, Keep},
		{"label mark, mine but only annotated", Parent{UID: parentUID, Mark: labelMark},
			Child{OwnerReferences: mine, Annotations: labels.Set{"m": "v"}}, Ignore},
		{"mark, namespaced parent, marked child in another namespace", Parent{UID: parentUID, Namespace: "a", Mark: mark},
			Child{Namespace: "b", OwnerReferences: mine, Annotations: marked}, Ignore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.parent, tt.child); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdopts(t *testing.T) {
	sel := labels.Everything()
	for _, tc := range []struct {
		p    Parent
		want bool
	}{
		{Parent{Selector: sel}, true},
		{Parent{Selector: sel, Deleting: true}, false},
		{Parent{}, false},
		{Parent{Selector: sel, Mark: &Mark{Key: "k", Value: "v"}}, false},
	} {
		if got := tc.p.Adopts(); got != tc.want {
			t.Errorf("%+v.Adopts() = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestClaimed(t *testing.T) {
	want := map[Decision]bool{Ignore: false, Keep: true, Adopt: true, Release: false}
	for d, claimed := range want {
		if d.Claimed() != claimed {
			t.Errorf("%v.Claimed() = %v, want %v", d, d.Claimed(), claimed)
		}
	}
}

func TestOfObjects(t *testing.T) {
	now := metav1.NewTime(time.Unix(1, 0))
	parent := &unstructured.Unstructured{}
	parent.SetUID(parentUID)
	parent.SetNamespace("a")
	parent.SetDeletionTimestamp(&now)
	child := &unstructured.Unstructured{}
	child.SetNamespace("a")
	child.SetLabels(labels.Set{"app": "a"})
	child.SetOwnerReferences([]metav1.OwnerReference{ref(parentUID, true)})
	child.SetDeletionTimestamp(&now)

	p := ParentOf(parent, labels.SelectorFromSet(labels.Set{"app": "a"}))
	if p.UID != parentUID || p.Namespace != "a" || !p.Deleting || p.Selector == nil {
		t.Errorf("ParentOf = %+v", p)
	}
	c := ChildOf(child)
	if c.Namespace != "a" || !c.Deleting || c.Labels.Get("app") != "a" || len(c.OwnerReferences) != 1 {
		t.Errorf("ChildOf = %+v", c)
	}
	if got := Decide(p, c); got != Keep {
		t.Errorf("Decide = %v, want Keep", got)
	}
}
