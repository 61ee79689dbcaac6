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
	if c.Namespace != "a" || !c.Deleting || c.Labels.Get("app") != "a" || !c.Controlled || c.ControllerUID != parentUID {
		t.Errorf("ChildOf = %+v", c)
	}
	if got := Decide(p, c); got != Keep {
		t.Errorf("Decide = %v, want Keep", got)
	}
}

// TestChildOfReadsOwnerReferencesInPlace checks that the ControllerRef ChildOf reads in place
// from an unstructured object is the one its typed owner references hold.
func TestChildOfReadsOwnerReferencesInPlace(t *testing.T) {
	entry := func(uid string, controller any) map[string]any {
		m := map[string]any{"apiVersion": "v1", "kind": "Widget", "name": "w", "uid": uid}
		if controller != nil {
			m["controller"] = controller
		}
		return m
	}
	tests := map[string]struct {
		refs          any
		controlled    bool
		controllerUID types.UID
	}{
		"none":                           {nil, false, ""},
		"not a list":                     {"x", false, ""},
		"one plain owner":                {[]any{entry("o", nil)}, false, ""},
		"controller after a plain owner": {[]any{entry("o", false), entry(string(parentUID), true)}, true, parentUID},
		"controller not a boolean":       {[]any{entry("o", "true")}, false, ""},
		"an entry not an object":         {[]any{entry(string(parentUID), true), "x"}, false, ""},
	}
	for name, tt := range tests {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "a"}}}
		if tt.refs != nil {
			u.Object["metadata"].(map[string]any)["ownerReferences"] = tt.refs
		}
		c := ChildOf(u)
		if c.Controlled != tt.controlled || c.ControllerUID != tt.controllerUID {
			t.Errorf("%s: ChildOf read controlled %v by %q, want %v by %q", name, c.Controlled, c.ControllerUID, tt.controlled, tt.controllerUID)
		}
		typed := Child{Namespace: "a", OwnerReferences: u.GetOwnerReferences()}
		if typed.OwnerReferences == nil {
			typed.OwnerReferences = []metav1.OwnerReference{}
		}
		p := Parent{UID: parentUID, Namespace: "a", Selector: labels.Everything()}
		if got, want := Decide(p, c), Decide(p, typed); got != want {
			t.Errorf("%s: Decide = %v in place, %v from the typed owner references", name, got, want)
		}
	}
}
