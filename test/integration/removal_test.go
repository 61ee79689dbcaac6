package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/manager"
	"metascript.dev/metascript/test/enginetest"
)

// TestDeletedControllerReleasesItsParents: a controller whose finalize hook holds finalizers
// on parents is deleted. The engine's own finalizer keeps it until every parent is released:
// a parent that lives on only loses the finalizer, a parent being deleted is finalized, and
// one whose finalize never succeeds is released once the removal grace has passed, with a
// Warning Event. No parent is left undeletable, and the controller goes.
func TestDeletedControllerReleasesItsParents(t *testing.T) {
	cc := controller(t, "removal.yaml")
	ns := env.Namespace(t)
	const finalizer = "metascript.dev/compositecontroller-removal"
	holds := func(name string) (exists, holding bool) {
		b := env.Get(t, bundleAPI, "Bundle", ns, name)
		return b != nil, b != nil && slices.Contains(b.GetFinalizers(), finalizer)
	}
	bundle(t, ns, "live", "removal", "live")
	leaving := bundle(t, ns, "leaving", "removal", "leaving")
	stuck := bundle(t, ns, "stuck", "removal", "stuck")
	env.Patch(t, stuck, `{"metadata":{"labels":{"stuck":"true"}}}`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		_, a := holds("live")
		_, b := holds("leaving")
		_, c := holds("stuck")
		cur := env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName())
		return a && b && c && slices.Contains(cur.GetFinalizers(), manager.ControllerFinalizer),
			fmt.Sprintf("parents hold the finalizer: %v %v %v; controller finalizers %v", a, b, c, cur.GetFinalizers())
	})
	// The stuck parent is being deleted; its finalize keeps failing.
	env.Delete(t, stuck)
	enginetest.Eventually(t, wait, func() (bool, string) {
		return len(env.Events(t, ns, "stuck")["HookFailed"]) > 0, "no HookFailed Event on the stuck parent yet"
	})

	env.Delete(t, cc)
	env.Delete(t, leaving) // deleted while the controller goes: finalized, then gone
	enginetest.Eventually(t, wait, func() (bool, string) {
		liveExists, liveHolds := holds("live")
		leavingExists, _ := holds("leaving")
		stuckExists, _ := holds("stuck")
		ccGone := env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName()) == nil
		return liveExists && !liveHolds && !leavingExists && !stuckExists && ccGone,
			fmt.Sprintf("live exists %v holds %v; leaving exists %v; stuck exists %v; controller gone %v",
				liveExists, liveHolds, leavingExists, stuckExists, ccGone)
	})
	if ev := env.Events(t, ns, "stuck")["FinalizeAbandoned"]; len(ev) == 0 {
		t.Fatalf("no FinalizeAbandoned Event on the parent released without its finalize: %v", env.Events(t, ns, "stuck"))
	}
	if ev := env.Events(t, ns, "leaving")["FinalizeAbandoned"]; len(ev) != 0 {
		t.Fatalf("the parent whose finalize succeeded was abandoned: %v", ev)
	}
}

// TestDeletedControllerWithManyParents: a controller with a finalize hook and 50 parents is
// deleted; every parent can then be deleted.
func TestDeletedControllerWithManyParents(t *testing.T) {
	cc := controller(t, "removal.yaml")
	ns := env.Namespace(t)
	const n, finalizer = 50, "metascript.dev/compositecontroller-removal"
	var parents []*unstructured.Unstructured
	for i := range n {
		parents = append(parents, bundle(t, ns, fmt.Sprintf("p%d", i), "removal", fmt.Sprintf("p%d", i)))
	}
	holding := func() int {
		list, err := env.Client(t, parents[0]).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, b := range list.Items {
			if slices.Contains(b.GetFinalizers(), finalizer) {
				held++
			}
		}
		return held
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		h := holding()
		return h == n, fmt.Sprintf("%d of %d parents hold the finalizer", h, n)
	})
	deleteController(t, cc)
	for _, p := range parents {
		env.Delete(t, p)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		list, err := env.Client(t, parents[0]).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 0, fmt.Sprintf("%d parents left after their controller went", len(list.Items))
	})
}
