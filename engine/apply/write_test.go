package apply

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestApplyCreatesUpdatesAndRemovesDroppedFields(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	first := configMap(ns, "child", map[string]string{"app": "a", "tier": "web"}, map[string]string{"keep": "1", "drop": "2"})
	action, err := a.Apply(ctx, configMaps, owner, first, nil)
	if err != nil || action != Created {
		t.Fatalf("first Apply = %v, %v; want Created", action, err)
	}
	live := observe(t, ctx, configMaps, ns, "child")
	if got, want := dataOf(t, live), map[string]string{"keep": "1", "drop": "2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data after create = %v, want %v", got, want)
	}
	refs := live.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != owner.UID || refs[0].Controller == nil || !*refs[0].Controller ||
		refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("ownerReferences = %+v, want one ControllerRef to %s with blockOwnerDeletion", refs, owner.UID)
	}
	if live.GetAnnotations()[AppliedHashAnnotation] == "" {
		t.Errorf("no %s annotation", AppliedHashAnnotation)
	}
	if got := live.GetAnnotations()[AppliedHashAnnotation]; !strings.HasPrefix(got, CreatedHashPrefix) {
		t.Errorf("%s = %q after a create, want the prefix %q", AppliedHashAnnotation, got, CreatedHashPrefix)
	}
	// Made by a plain create: the server records the fields under an Update entry.
	managers := managersOf(t, ctx, configMaps, ns, "child")
	if managers["metascript/test"] != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("managedFields = %v, want metascript/test with operation Update", managers)
	}

	// The hook stops returning the label tier and the key drop, and adds a key.
	second := configMap(ns, "child", map[string]string{"app": "a"}, map[string]string{"keep": "1", "new": "3"})
	action, err = a.Apply(ctx, configMaps, owner, second, live)
	if err != nil || action != Updated {
		t.Fatalf("second Apply = %v, %v; want Updated", action, err)
	}
	live = observe(t, ctx, configMaps, ns, "child")
	if got, want := dataOf(t, live), map[string]string{"keep": "1", "new": "3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data after update = %v, want %v", got, want)
	}
	if got, want := live.GetLabels(), map[string]string{"app": "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels after update = %v, want %v", got, want)
	}
	managers = managersOf(t, ctx, configMaps, ns, "child")
	if len(managers) != 1 || managers["metascript/test"] != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields = %v after an apply, want only metascript/test with operation Apply", managers)
	}
	if got := live.GetAnnotations()[AppliedHashAnnotation]; strings.HasPrefix(got, CreatedHashPrefix) {
		t.Errorf("%s = %q after an apply, want no prefix", AppliedHashAnnotation, got)
	}

	// Only dropping a field: everything desired is already in place, yet the field must go.
	third := configMap(ns, "child", map[string]string{"app": "a"}, map[string]string{"keep": "1"})
	action, err = a.Apply(ctx, configMaps, owner, third, live)
	if err != nil || action != Updated {
		t.Fatalf("third Apply = %v, %v; want Updated", action, err)
	}
	live = observe(t, ctx, configMaps, ns, "child")
	if got, want := dataOf(t, live), map[string]string{"keep": "1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data after dropping a key = %v, want %v", got, want)
	}
}

func TestApplySendsNoRequestAtSteadyState(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	// A Widget whose spec.mode the server defaults and whose numbers the hook produced as Go
	// ints and integral floats.
	widget := obj("test.metascript.dev/v1", "Widget", ns, "child")
	widget.SetLabels(map[string]string{"app": "a"})
	widget.Object["spec"] = map[string]interface{}{"size": 3, "ratio": 2.0, "tags": []interface{}{"x", "y"}, "empty": map[string]interface{}{}}
	cm := configMap(ns, "child", map[string]string{"app": "a"}, map[string]string{"k": "v"})

	for _, tc := range []struct {
		res     Resource
		desired *unstructured.Unstructured
	}{{widgets, widget}, {configMaps, cm}} {
		if _, err := a.Apply(ctx, tc.res, owner, tc.desired, nil); err != nil {
			t.Fatal(err)
		}
		live := observe(t, ctx, tc.res, ns, "child")
		// Someone else adds a field, a label and a plain owner reference; none is ours to judge.
		live.SetOwnerReferences(append(live.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid"}))
		labels := live.GetLabels()
		labels["someone"] = "else"
		live.SetLabels(labels)
		updated, err := plain.Resource(tc.res.GVR).Namespace(ns).Update(ctx, live, metav1.UpdateOptions{FieldManager: "someone-else"})
		if err != nil {
			t.Fatal(err)
		}
		updated.SetManagedFields(nil)

		var action Action
		n := requests(func() { action, err = a.Apply(ctx, tc.res, owner, tc.desired, updated) })
		if err != nil || action != Unchanged || n != 0 {
			t.Errorf("%s: Apply at steady state = %v, %v with %d requests; want Unchanged with 0", tc.res.GVR.Resource, action, err, n)
		}
		if ok, err := UpToDate(owner, tc.desired, updated); !ok || err != nil {
			t.Errorf("%s: UpToDate = %v, %v; want true", tc.res.GVR.Resource, ok, err)
		}
	}
}

func TestApplyRepairsDrift(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	desired := configMap(ns, "child", map[string]string{"app": "a", "tier": "web"}, map[string]string{"k": "v"})
	if _, err := a.Apply(ctx, configMaps, owner, desired, nil); err != nil {
		t.Fatal(err)
	}
	// Someone else changes a value we own, removes a label we own and adds a key of its own.
	drifted := observe(t, ctx, configMaps, ns, "child")
	drifted.Object["data"] = map[string]interface{}{"k": "changed", "theirs": "x"}
	drifted.SetLabels(map[string]string{"app": "a"})
	drifted, err := plain.Resource(configMaps.GVR).Namespace(ns).Update(ctx, drifted, metav1.UpdateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	drifted.SetManagedFields(nil)

	if ok, _ := UpToDate(owner, desired, drifted); ok {
		t.Fatal("UpToDate = true for a drifted child")
	}
	action, err := a.Apply(ctx, configMaps, owner, desired, drifted)
	if err != nil || action != Updated {
		t.Fatalf("Apply = %v, %v; want Updated", action, err)
	}
	live := observe(t, ctx, configMaps, ns, "child")
	if got, want := dataOf(t, live), map[string]string{"k": "v", "theirs": "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
	if got := live.GetLabels()["tier"]; got != "web" {
		t.Errorf("label tier = %q, want web", got)
	}
	var n int64
	n = requests(func() { action, err = a.Apply(ctx, configMaps, owner, desired, live) })
	if err != nil || action != Unchanged || n != 0 {
		t.Errorf("Apply after repair = %v, %v with %d requests; want Unchanged with 0", action, err, n)
	}
}

func TestApplyDoesNotWriteAReplacedChild(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	if _, err := a.Apply(ctx, configMaps, owner, configMap(ns, "child", nil, map[string]string{"k": "1"}), nil); err != nil {
		t.Fatal(err)
	}
	stale := observe(t, ctx, configMaps, ns, "child")
	if err := plain.Resource(configMaps.GVR).Namespace(ns).Delete(ctx, "child", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Deleted and not yet replaced.
	_, err := a.Apply(ctx, configMaps, owner, configMap(ns, "child", nil, map[string]string{"k": "2"}), stale)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Apply over a deleted child: err = %v, want ErrConflict", err)
	}
	if !gone(t, ctx, configMaps, ns, "child") {
		t.Fatal("Apply over a deleted child recreated it")
	}

	replacement := create(t, ctx, configMaps, configMap(ns, "child", nil, map[string]string{"k": "theirs"}))

	_, err = a.Apply(ctx, configMaps, owner, configMap(ns, "child", nil, map[string]string{"k": "2"}), stale)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Apply over a replaced child: err = %v, want ErrConflict", err)
	}
	live := observe(t, ctx, configMaps, ns, "child")
	if live.GetUID() != replacement.GetUID() || dataOf(t, live)["k"] != "theirs" || len(live.GetOwnerReferences()) != 0 {
		t.Errorf("replacement was written: %v", live.Object)
	}
}

func TestApplyRefusesWhatItMustNotWrite(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	foreign := configMap(ns, "foreign", nil, nil)
	yes := true
	foreign.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other", Controller: &yes}})
	foreign = create(t, ctx, configMaps, foreign)
	foreign.SetManagedFields(nil)
	namedOther := configMap(ns, "child", nil, nil)
	namedOther.SetOwnerReferences(foreign.GetOwnerReferences())

	tests := []struct {
		name     string
		res      Resource
		owner    metav1.OwnerReference
		desired  *unstructured.Unstructured
		observed *unstructured.Unstructured
		want     error // with no request sent when observed is given
	}{
		{"observed controlled by another owner", configMaps, owner, configMap(ns, "foreign", nil, map[string]string{"k": "v"}), foreign, ErrNotOwned},
		// A create over an object the cache did not know: whoever owns it, claiming decides.
		{"stale cache: a child of another owner exists", configMaps, owner, configMap(ns, "foreign", nil, map[string]string{"k": "v"}), nil, ErrConflict},
		{"desired names another controller", configMaps, owner, namedOther, nil, ErrInvalid},
		{"namespaced child without namespace", configMaps, owner, configMap("", "child", nil, nil), nil, ErrInvalid},
		{"cluster-scoped child with namespace", clusterWidgets, owner, obj("test.metascript.dev/v1", "ClusterWidget", ns, "child"), nil, ErrInvalid},
		{"no name", configMaps, owner, configMap(ns, "", nil, nil), nil, ErrInvalid},
		{"observed is another object", configMaps, owner, configMap(ns, "child", nil, nil), foreign, ErrInvalid},
		{"owner without uid", configMaps, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "p"}, configMap(ns, "child", nil, nil), nil, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := requests(func() { _, err = a.Apply(ctx, tt.res, tt.owner, tt.desired, tt.observed) })
			if !errors.Is(err, tt.want) || (tt.observed != nil && n != 0) {
				t.Errorf("Apply: err = %v after %d requests; want %v", err, n, tt.want)
			}
		})
	}
	live := observe(t, ctx, configMaps, ns, "foreign")
	if len(live.GetOwnerReferences()) != 1 || live.GetResourceVersion() != foreign.GetResourceVersion() {
		t.Errorf("the child of another owner was written: %v", live.Object)
	}
}

func TestApplyClusterScoped(t *testing.T) {
	ctx := integration(t)
	parent := create(t, ctx, clusterWidgets, obj("test.metascript.dev/v1", "ClusterWidget", "", "cluster-parent"))
	owner := OwnerRef(parent)
	a := New(counted, "test")

	desired := obj("test.metascript.dev/v1", "ClusterWidget", "", "cluster-child")
	desired.Object["spec"] = map[string]interface{}{"size": int64(1), "color": "red"}
	if action, err := a.Apply(ctx, clusterWidgets, owner, desired, nil); err != nil || action != Created {
		t.Fatalf("Apply = %v, %v; want Created", action, err)
	}
	desired.Object["spec"] = map[string]interface{}{"size": int64(2)}
	live := observe(t, ctx, clusterWidgets, "", "cluster-child")
	if action, err := a.Apply(ctx, clusterWidgets, owner, desired, live); err != nil || action != Updated {
		t.Fatalf("Apply = %v, %v; want Updated", action, err)
	}
	live = observe(t, ctx, clusterWidgets, "", "cluster-child")
	spec, _, _ := unstructured.NestedMap(live.Object, "spec")
	if want := map[string]interface{}{"size": int64(2), "mode": "auto"}; !reflect.DeepEqual(spec, want) {
		t.Errorf("spec = %v, want %v (color dropped, mode defaulted)", spec, want)
	}
	if metav1.GetControllerOf(live).UID != types.UID(parent.GetUID()) {
		t.Errorf("controller = %+v, want %s", metav1.GetControllerOf(live), parent.GetUID())
	}
	var action Action
	var err error
	n := requests(func() { action, err = a.Apply(ctx, clusterWidgets, owner, desired, live) })
	if err != nil || action != Unchanged || n != 0 {
		t.Errorf("Apply at steady state = %v, %v with %d requests; want Unchanged with 0", action, err, n)
	}
}

// managersOf returns the field managers of the live object and their operations.
func managersOf(t *testing.T, ctx context.Context, res Resource, namespace, name string) map[string]metav1.ManagedFieldsOperationType {
	t.Helper()
	out, err := plain.Resource(res.GVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]metav1.ManagedFieldsOperationType{}
	for _, f := range out.GetManagedFields() {
		m[f.Manager] = f.Operation
	}
	return m
}

// TestApplyOverACreatedChildOthersWrote: when another manager wrote a created child before
// its first apply, the created fields still become the field manager's applied ones (read and
// rewritten), so a field the hook drops goes and the other manager's field stays.
func TestApplyOverACreatedChildOthersWrote(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	if _, err := a.Apply(ctx, configMaps, owner, configMap(ns, "child", nil, map[string]string{"keep": "1", "drop": "2"}), nil); err != nil {
		t.Fatal(err)
	}
	theirs := configMap(ns, "child", map[string]string{"someone": "else"}, nil)
	if _, err := plain.Resource(configMaps.GVR).Namespace(ns).Apply(ctx, "child", theirs, metav1.ApplyOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	live := observe(t, ctx, configMaps, ns, "child")
	var action Action
	var err error
	n := requests(func() {
		action, err = a.Apply(ctx, configMaps, owner, configMap(ns, "child", nil, map[string]string{"keep": "1"}), live)
	})
	if err != nil || action != Updated {
		t.Fatalf("Apply = %v, %v; want Updated", action, err)
	}
	// The patch counting on a lone entry fails, then a read, a patch and the apply.
	if n != 4 {
		t.Errorf("Apply sent %d requests, want 4", n)
	}
	live = observe(t, ctx, configMaps, ns, "child")
	if got, want := dataOf(t, live), map[string]string{"keep": "1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
	if got := live.GetLabels()["someone"]; got != "else" {
		t.Errorf("the other manager's label = %q, want it kept", got)
	}
	want := map[string]metav1.ManagedFieldsOperationType{"metascript/test": metav1.ManagedFieldsOperationApply, "someone-else": metav1.ManagedFieldsOperationApply}
	if got := managersOf(t, ctx, configMaps, ns, "child"); !reflect.DeepEqual(got, want) {
		t.Errorf("managedFields = %v, want %v", got, want)
	}
}
