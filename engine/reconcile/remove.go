package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A controller resource being deleted keeps its runner until no parent holds the runner's
// finalizer (the manager holds a finalizer of its own on the controller resource for that):
// once Remove is called, the runner calls no hook but finalize, for the parents already
// being deleted; every other parent only has the finalizer removed. A parent whose finalize
// does not succeed within the grace period is released without it, with a Warning Event.
//
// Children the garbage collector does not delete (a Cleaner's, beyond the parent's namespace)
// are deleted by the engine for the parents already being deleted, as ever, within that
// grace. The other parents keep theirs: the finalizer goes, the children keep the labels they
// are claimed by, and a controller re-created under the same name claims them again (and
// takes the finalizer back). Once their parent is deleted without the controller, they are
// left in place, unowned: delete them by the label claim.ParentUIDLabel.

// removal is when Remove was called and how long finalize may take from then.
type removal struct {
	start time.Time
	grace time.Duration
}

// Remove switches the runner to releasing its parents, once, and enqueues every parent. It
// is safe for concurrent use once Start has returned.
func (r *Runner) Remove(grace time.Duration) {
	if r.removing.CompareAndSwap(nil, &removal{start: time.Now(), grace: grace}) {
		r.cfg.Log.Info("controller deleted: releasing its parents", "grace", grace.String())
		r.Resync()
	}
}

// RemovalSince is when Remove was first called; zero before.
func (r *Runner) RemovalSince() time.Time {
	if rm := r.removing.Load(); rm != nil {
		return rm.start
	}
	return time.Time{}
}

// Holding counts, in lists the caller makes with the engine's own client (a member of a ring
// caches its own parents only; a controller's account may not list them all), the parents
// that still hold the runner's finalizer. list lists one parent resource, in namespace ns
// (all when empty); a resource no longer served holds nothing.
func (r *Runner) Holding(ctx context.Context, list func(ctx context.Context, res ParentResource, ns string) (*unstructured.UnstructuredList, error)) (int, error) {
	n := 0
	for _, p := range r.parents {
		ns := ""
		if p.Namespaced {
			ns = r.built.Namespace
		}
		items, err := list(ctx, p.ParentResource, ns)
		if apierrors.IsNotFound(err) {
			continue // the resource is gone (its CRD deleted): no parent is left to hold anything
		}
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", p.GVR.Resource, err)
		}
		for i := range items.Items {
			if slices.Contains(items.Items[i].GetFinalizers(), r.finalizer) {
				n++
			}
		}
	}
	return n, nil
}

// abandon reports whether a parent being finalized during removal has run out of its grace,
// and then releases it: its finalize hook did not succeed in time.
func (r *Runner) abandon(ctx context.Context, res int, parent *unstructured.Unstructured) (bool, error) {
	rm := r.removing.Load()
	if rm == nil || time.Since(rm.start) < rm.grace {
		return false, nil
	}
	msg := fmt.Sprintf("the controller was deleted and its finalize hook did not succeed within %s: finalizer %s removed without it",
		rm.grace, r.finalizer)
	r.cfg.Recorder.Event(parent, corev1.EventTypeWarning, "FinalizeAbandoned", msg)
	return true, r.patchFinalizers(ctx, res, parent, false)
}
