package apply

import (
	"errors"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDelete(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	a := New(counted, "test")

	child := create(t, ctx, configMaps, configMap(ns, "child", nil, nil))
	if err := a.Delete(ctx, configMaps, child); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if !gone(t, ctx, configMaps, ns, "child") {
		t.Fatal("child still exists after Delete")
	}
	if err := a.Delete(ctx, configMaps, child); !errors.Is(err, ErrGone) {
		t.Fatalf("Delete of a deleted child = %v, want ErrGone", err)
	}

	replacement := create(t, ctx, configMaps, configMap(ns, "child", nil, nil))
	if err := a.Delete(ctx, configMaps, child); !errors.Is(err, ErrConflict) {
		t.Fatalf("Delete of a replaced child = %v, want ErrConflict", err)
	}
	if live := observe(t, ctx, configMaps, ns, "child"); live.GetUID() != replacement.GetUID() {
		t.Fatal("replacement was deleted")
	}

	// No resourceVersion precondition: a child changed since it was observed is still deleted.
	live := observe(t, ctx, configMaps, ns, "child")
	live.SetLabels(map[string]string{"changed": "yes"})
	if _, err := plain.Resource(configMaps.GVR).Namespace(ns).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, configMaps, replacement); err != nil {
		t.Fatalf("Delete of a changed child = %v", err)
	}

	cluster := create(t, ctx, clusterWidgets, obj("test.metascript.dev/v1", "ClusterWidget", "", "delete-me"))
	if err := a.Delete(ctx, clusterWidgets, cluster); err != nil || !gone(t, ctx, clusterWidgets, "", "delete-me") {
		t.Fatalf("Delete of a cluster-scoped child = %v", err)
	}
}

func TestTwoParentsRaceToAdoptAnOrphan(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	parents := []metav1.OwnerReference{newParent(t, ctx, ns, "one"), newParent(t, ctx, ns, "two")}

	// Several rounds, each with a fresh orphan both parents see in the same state.
	for round := 0; round < 5; round++ {
		orphan := create(t, ctx, configMaps, configMap(ns, "orphan", map[string]string{"app": "a"}, nil))
		errs := make([]error, len(parents))
		var start, done sync.WaitGroup
		start.Add(1)
		for i, p := range parents {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				_, errs[i] = New(plain, string(p.Name)).Adopt(ctx, configMaps, p, orphan)
			}()
		}
		start.Done()
		done.Wait()

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Fatalf("round %d: both parents adopted", round)
			case !errors.Is(err, ErrConflict):
				t.Fatalf("round %d: loser's error = %v, want ErrConflict", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody adopted: %v", round, errs)
		}
		live := observe(t, ctx, configMaps, ns, "orphan")
		if c := metav1.GetControllerOf(live); c == nil || c.UID != parents[winner].UID || len(live.GetOwnerReferences()) != 1 {
			t.Fatalf("round %d: ownerReferences = %+v, want only %s", round, live.GetOwnerReferences(), parents[winner].Name)
		}

		// The loser retrying with a fresh view is told the child is not its to take.
		loser := parents[1-winner]
		if _, err := New(plain, loser.Name).Adopt(ctx, configMaps, loser, live); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("round %d: loser's retry = %v, want ErrNotOwned", round, err)
		}
		if err := plain.Resource(configMaps.GVR).Namespace(ns).Delete(ctx, "orphan", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAdoptKeepsOtherOwnersAndIsIdempotent(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	plainRef := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "test.metascript.dev/v1", Kind: "Widget", Name: name, UID: uid}
	}
	orphan := configMap(ns, "orphan", nil, nil)
	// A plain owner reference to another object, and one to the adopting parent that must
	// become its ControllerRef rather than a duplicate.
	orphan.SetOwnerReferences([]metav1.OwnerReference{plainRef("other", "other-uid"), plainRef(owner.Name, owner.UID)})
	orphan = create(t, ctx, configMaps, orphan)

	adopted, err := a.Adopt(ctx, configMaps, owner, orphan)
	if err != nil {
		t.Fatal(err)
	}
	refs := adopted.GetOwnerReferences()
	if len(refs) != 2 || refs[0].UID != "other-uid" || refs[1].UID != owner.UID || !*refs[1].Controller || !*refs[1].BlockOwnerDeletion {
		t.Fatalf("ownerReferences = %+v", refs)
	}
	var again error
	if n := requests(func() { _, again = a.Adopt(ctx, configMaps, owner, adopted) }); again != nil || n != 0 {
		t.Fatalf("Adopt of an adopted child = %v with %d requests, want nil with 0", again, n)
	}

	// A stale view (the object changed since) fails instead of clobbering.
	if _, err := a.Adopt(ctx, configMaps, owner, orphan); !errors.Is(err, ErrConflict) {
		t.Fatalf("Adopt with a stale view = %v, want a conflict", err)
	}
}

func TestRelease(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	owner := newParent(t, ctx, ns, "parent")
	a := New(counted, "test")

	other := metav1.OwnerReference{APIVersion: "test.metascript.dev/v1", Kind: "Widget", Name: "other", UID: "other-uid"}
	child := configMap(ns, "child", map[string]string{"app": "a"}, nil)
	child.SetOwnerReferences([]metav1.OwnerReference{other})
	child = create(t, ctx, configMaps, child)
	adopted, err := a.Adopt(ctx, configMaps, owner, child)
	if err != nil {
		t.Fatal(err)
	}

	// Someone relabels the child after the parent's view was taken: the stale release fails.
	live := observe(t, ctx, configMaps, ns, "child")
	live.SetLabels(map[string]string{"app": "b"})
	relabelled, err := plain.Resource(configMaps.GVR).Namespace(ns).Update(ctx, live, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Release(ctx, configMaps, owner.UID, adopted); !errors.Is(err, ErrConflict) {
		t.Fatalf("Release with a stale view = %v, want ErrConflict", err)
	}

	released, err := a.Release(ctx, configMaps, owner.UID, relabelled)
	if err != nil {
		t.Fatal(err)
	}
	if refs := released.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != other.UID {
		t.Fatalf("ownerReferences after release = %+v, want only %s", refs, other.Name)
	}
	var again error
	if n := requests(func() { _, again = a.Release(ctx, configMaps, owner.UID, released) }); again != nil || n != 0 {
		t.Fatalf("Release of a released child = %v with %d requests, want nil with 0", again, n)
	}

	// Releasing the last owner reference removes the field; the orphan can be adopted again.
	second := newParent(t, ctx, ns, "second")
	adopted, err = a.Adopt(ctx, configMaps, second, create(t, ctx, configMaps, configMap(ns, "only", nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	released, err = a.Release(ctx, configMaps, second.UID, adopted)
	if err != nil || len(released.GetOwnerReferences()) != 0 {
		t.Fatalf("Release = %v, ownerReferences %+v", err, released.GetOwnerReferences())
	}
	if _, err := a.Adopt(ctx, configMaps, owner, released); err != nil {
		t.Fatalf("re-adoption = %v", err)
	}

	// A released child that is gone is reported as such.
	if err := plain.Resource(configMaps.GVR).Namespace(ns).Delete(ctx, "child", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Release(ctx, configMaps, owner.UID, relabelled); !errors.Is(err, ErrGone) {
		t.Fatalf("Release of a deleted child = %v, want ErrGone", err)
	}
}
