package apply

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
)

const holdFinalizer = "test.metascript.dev/hold"

func TestReconcile(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	old := map[string]string{"v": "old"}
	want := map[string]string{"v": "new"}
	// Setups return the observed child, or nil for none.
	missing := func(t *testing.T, name string) *unstructured.Unstructured { return nil }
	applied := func(data map[string]string) func(*testing.T, string) *unstructured.Unstructured {
		return func(t *testing.T, name string) *unstructured.Unstructured {
			if _, err := a.Apply(ctx, configMaps, owner, configMap(ns, name, nil, data), nil); err != nil {
				t.Fatal(err)
			}
			return observe(t, ctx, configMaps, ns, name)
		}
	}
	// updated is a child created, then applied over once: no longer a created child.
	updated := func(data map[string]string) func(*testing.T, string) *unstructured.Unstructured {
		return func(t *testing.T, name string) *unstructured.Unstructured {
			first := applied(map[string]string{"v": "first"})(t, name)
			if _, err := a.Apply(ctx, configMaps, owner, configMap(ns, name, nil, data), first); err != nil {
				t.Fatal(err)
			}
			return observe(t, ctx, configMaps, ns, name)
		}
	}
	deleting := func(data map[string]string) func(*testing.T, string) *unstructured.Unstructured {
		return func(t *testing.T, name string) *unstructured.Unstructured {
			applied(data)(t, name)
			live := observe(t, ctx, configMaps, ns, name)
			live.SetFinalizers([]string{holdFinalizer})
			if _, err := plain.Resource(configMaps.GVR).Namespace(ns).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := plain.Resource(configMaps.GVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				patch := []byte(`{"metadata":{"finalizers":null}}`)
				_, _ = plain.Resource(configMaps.GVR).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
			})
			return observe(t, ctx, configMaps, ns, name)
		}
	}
	// staleOld is an applied child changed by someone else after it was observed.
	staleOld := func(t *testing.T, name string) *unstructured.Unstructured {
		observed := applied(old)(t, name)
		live := observe(t, ctx, configMaps, ns, name)
		live.SetLabels(map[string]string{"touched": "yes"})
		if _, err := plain.Resource(configMaps.GVR).Namespace(ns).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return observed
	}
	foreign := func(t *testing.T, name string) *unstructured.Unstructured {
		cm := configMap(ns, name, nil, old)
		yes := true
		cm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other", Controller: &yes}})
		return create(t, ctx, configMaps, cm)
	}

	const anyCount = -1
	tests := []struct {
		name     string
		method   v1alpha1.ChildUpdateMethod
		observed func(*testing.T, string) *unstructured.Unstructured
		desired  map[string]string // nil: the hook does not want the child
		action   Action
		err      error
		requests int64
		live     map[string]string // data of the live child afterwards; nil: the child is gone
	}{
		{"OnDelete creates a missing child", v1alpha1.ChildUpdateOnDelete, missing, want, Created, nil, 1, want},
		{"OnDelete leaves a differing child", v1alpha1.ChildUpdateOnDelete, applied(old), want, Skipped, nil, 0, old},
		{"OnDelete leaves a matching child", v1alpha1.ChildUpdateOnDelete, applied(want), want, Unchanged, nil, 0, want},
		{"default method is OnDelete", "", applied(old), want, Skipped, nil, 0, old},
		{"default method creates a missing child", "", missing, want, Created, nil, 1, want},
		{"Recreate deletes a differing child", v1alpha1.ChildUpdateRecreate, applied(old), want, Deleted, nil, 1, nil},
		{"Recreate creates a missing child", v1alpha1.ChildUpdateRecreate, missing, want, Created, nil, 1, want},
		{"Recreate leaves a matching child", v1alpha1.ChildUpdateRecreate, applied(want), want, Unchanged, nil, 0, want},
		{"Recreate does not delete a child changed since observed", v1alpha1.ChildUpdateRecreate, staleOld, want, Unchanged, ErrConflict, 1, old},
		// The first update of a created child also makes its fields the field manager's
		// applied ones: one more request.
		{"InPlace updates a differing created child", v1alpha1.ChildUpdateInPlace, applied(old), want, Updated, nil, 2, want},
		{"InPlace updates a differing child", v1alpha1.ChildUpdateInPlace, updated(old), want, Updated, nil, 1, want},
		{"InPlace leaves a matching updated child", v1alpha1.ChildUpdateInPlace, updated(want), want, Unchanged, nil, 0, want},
		{"InPlace leaves a matching child", v1alpha1.ChildUpdateInPlace, applied(want), want, Unchanged, nil, 0, want},
		{"InPlace creates a missing child", v1alpha1.ChildUpdateInPlace, missing, want, Created, nil, 1, want},
		{"InPlace waits for a deleting child", v1alpha1.ChildUpdateInPlace, deleting(old), want, Skipped, nil, 0, old},
		{"Recreate waits for a deleting child", v1alpha1.ChildUpdateRecreate, deleting(old), want, Skipped, nil, 0, old},
		{"an unwanted child is deleted", v1alpha1.ChildUpdateOnDelete, applied(old), nil, Deleted, nil, 1, nil},
		{"an unwanted deleting child is left to finish", v1alpha1.ChildUpdateInPlace, deleting(old), nil, Skipped, nil, 0, old},
		{"an unwanted child of another owner is not deleted", v1alpha1.ChildUpdateInPlace, foreign, nil, Unchanged, ErrNotOwned, 0, old},
		{"a wanted child of another owner is not written", v1alpha1.ChildUpdateInPlace, foreign, want, Unchanged, ErrNotOwned, 0, old},
		{"RollingRecreate is not supported", v1alpha1.ChildUpdateRollingRecreate, applied(old), want, Unchanged, ErrUnsupportedMethod, 0, old},
		{"RollingInPlace is not supported", v1alpha1.ChildUpdateRollingInPlace, applied(old), want, Unchanged, ErrUnsupportedMethod, 0, old},
		{"an unknown method is refused", "Sometimes", applied(old), want, Unchanged, ErrUnsupportedMethod, 0, old},
		{"nothing desired and nothing observed", v1alpha1.ChildUpdateInPlace, missing, nil, Unchanged, ErrInvalid, 0, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "child-" + string(rune('a'+i))
			observed := tt.observed(t, name)
			var desired *unstructured.Unstructured
			if tt.desired != nil {
				desired = configMap(ns, name, nil, tt.desired)
			}
			var action Action
			var err error
			n := requests(func() { action, err = reconcileChild(ctx, a, configMaps, owner, desired, observed, tt.method) })
			if action != tt.action || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Errorf("reconcileChild = %v, %v; want %v, %v", action, err, tt.action, tt.err)
			}
			if tt.requests != anyCount && n != tt.requests {
				t.Errorf("reconcileChild sent %d requests, want %d", n, tt.requests)
			}
			if tt.live == nil {
				if !gone(t, ctx, configMaps, ns, name) {
					t.Errorf("child still exists")
				}
				return
			}
			if got := dataOf(t, observe(t, ctx, configMaps, ns, name)); got["v"] != tt.live["v"] {
				t.Errorf("live data = %v, want %v", got, tt.live)
			}
		})
	}
}

// TestRecreateConverges walks a Recreate update through the syncs a reconciler would run.
func TestRecreateConverges(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	if _, err := reconcileChild(ctx, a, configMaps, owner, configMap(ns, "child", nil, map[string]string{"v": "1"}), nil, v1alpha1.ChildUpdateRecreate); err != nil {
		t.Fatal(err)
	}
	first := observe(t, ctx, configMaps, ns, "child")
	desired := configMap(ns, "child", nil, map[string]string{"v": "2"})
	steps := []struct {
		observed *unstructured.Unstructured
		want     Action
	}{{first, Deleted}, {nil, Created}}
	for _, s := range steps {
		if action, err := reconcileChild(ctx, a, configMaps, owner, desired, s.observed, v1alpha1.ChildUpdateRecreate); err != nil || action != s.want {
			t.Fatalf("reconcileChild = %v, %v; want %v", action, err, s.want)
		}
	}
	second := observe(t, ctx, configMaps, ns, "child")
	if second.GetUID() == first.GetUID() || dataOf(t, second)["v"] != "2" {
		t.Fatalf("child was not recreated: uid %s (was %s), data %v", second.GetUID(), first.GetUID(), dataOf(t, second))
	}
	if action, err := reconcileChild(ctx, a, configMaps, owner, desired, second, v1alpha1.ChildUpdateRecreate); err != nil || action != Unchanged {
		t.Fatalf("reconcileChild at steady state = %v, %v; want Unchanged", action, err)
	}
}

// reconcileChild moves one child as the reconciler does: Plan, then Send when a request is
// needed.
func reconcileChild(ctx context.Context, a *Applier, res Resource, owner metav1.OwnerReference,
	desired, observed *unstructured.Unstructured, method v1alpha1.ChildUpdateMethod) (Action, error) {
	step, err := Plan(res, owner, desired, observed, method)
	if err != nil {
		return Unchanged, err
	}
	if action, _, done := step.Done(); done {
		return action, nil
	}
	action, _, err := a.Send(ctx, step)
	return action, err
}
