package apply

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Action is what a write function did to one child; its value suits a metric label.
type Action string

const (
	// Unchanged: no request was sent because the child already matches.
	Unchanged Action = "unchanged"
	// Skipped: no request was sent although the child differs from the desired state,
	// because the update method leaves existing children alone (OnDelete) or the child is
	// already being deleted (it is recreated by a later sync once gone).
	Skipped Action = "skipped"
	// Created: the child did not exist in the cache and was applied.
	Created Action = "created"
	// Updated: the existing child was applied.
	Updated Action = "updated"
	// Deleted: a delete request was accepted; the child may linger until its finalizers run.
	Deleted Action = "deleted"
)

// Reconcile moves one child of owner towards its desired state under the update method and
// says what it did. desired is the child the hook returned, or nil if the hook no longer
// wants it; observed is the claimed child from the cache, or nil if there is none. The
// reconciler calls it once per child, after claiming (observed must not be controlled by
// another owner).
//
//	desired  observed                      action
//	nil      nil                           ErrInvalid
//	nil      present, not being deleted    Delete (UID precondition)        -> Deleted
//	nil      being deleted                 none                             -> Skipped
//	present  nil                           Apply                            -> Created
//	present  up to date (see UpToDate)     none                             -> Unchanged
//	present  differs, being deleted        none                             -> Skipped
//	present  differs, OnDelete or ""       none                             -> Skipped
//	present  differs, Recreate             delete (UID and resourceVersion) -> Deleted
//	present  differs, InPlace              Apply                            -> Updated
//	present  differs, Rolling*             ErrUnsupportedMethod
//
// Recreate deletes only when the child still has the resourceVersion judged out of date, so
// a child changed meanwhile is judged again; a later sync creates the replacement once the
// old child is gone.
//
// Errors are those of Apply and Delete: ErrGone and ErrConflict mean requeue; ErrInvalid,
// ErrNotOwned and ErrUnsupportedMethod mean the call cannot succeed as given; anything else is
// worth a retry with backoff.
func (a *Applier) Reconcile(ctx context.Context, res Resource, owner metav1.OwnerReference, desired, observed *unstructured.Unstructured, method v1alpha1.ChildUpdateMethod) (Action, error) {
	action, _, err := a.ReconcileStored(ctx, res, owner, desired, observed, method)
	return action, err
}

// ReconcileStored is Reconcile that also returns the child as it is now stored, as far as
// this call knows: the server's answer when it applied (Created, Updated), observed when it
// sent nothing (Unchanged, Skipped), nil when it deleted the child or failed.
func (a *Applier) ReconcileStored(ctx context.Context, res Resource, owner metav1.OwnerReference, desired, observed *unstructured.Unstructured, method v1alpha1.ChildUpdateMethod) (Action, *unstructured.Unstructured, error) {
	switch method {
	case "", v1alpha1.ChildUpdateOnDelete, v1alpha1.ChildUpdateRecreate, v1alpha1.ChildUpdateInPlace:
	case v1alpha1.ChildUpdateRollingRecreate, v1alpha1.ChildUpdateRollingInPlace:
		return Unchanged, nil, fmt.Errorf("%w: %s is not supported yet; use OnDelete, Recreate or InPlace", ErrUnsupportedMethod, method)
	default:
		return Unchanged, nil, fmt.Errorf("%w: unknown update method %q", ErrUnsupportedMethod, method)
	}

	if desired == nil {
		if observed == nil {
			return Unchanged, nil, fmt.Errorf("%w: neither a desired nor an observed child", ErrInvalid)
		}
		if ref := controllerOf(observed); ref != nil && ref.UID != owner.UID {
			return Unchanged, nil, fmt.Errorf("%w: %s is controlled by %s %s", ErrNotOwned, describe(res, observed), ref.Kind, ref.Name)
		}
		if observed.GetDeletionTimestamp() != nil {
			return Skipped, observed, nil
		}
		if err := a.Delete(ctx, res, observed); err != nil {
			return Unchanged, nil, err
		}
		return Deleted, nil, nil
	}

	config, hash, err := configuration(owner, desired)
	if err != nil {
		return Unchanged, nil, err
	}
	if observed == nil {
		return a.apply(ctx, res, owner, config, hash, nil)
	}
	if err := a.checkObserved(res, owner, config, observed); err != nil {
		return Unchanged, nil, err
	}
	if upToDate(config, hash, observed) {
		return Unchanged, observed, nil
	}
	if observed.GetDeletionTimestamp() != nil {
		return Skipped, observed, nil
	}
	switch method {
	case v1alpha1.ChildUpdateRecreate:
		if err := a.delete(ctx, res, observed, true); err != nil {
			return Unchanged, nil, err
		}
		return Deleted, nil, nil
	case v1alpha1.ChildUpdateInPlace:
		return a.apply(ctx, res, owner, config, hash, observed)
	}
	return Skipped, observed, nil
}
