package apply

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Apply makes the child desired exist as this controller's child of owner under this
// Applier's field manager: a plain create when observed is nil, else a server-side apply with
// force (see create.go for how the two fit together). The configuration written is desired
// with owner set as its ControllerRef (controller and blockOwnerDeletion true) and the
// AppliedHashAnnotation recorded; see UpToDate for both. Because the field manager owns
// exactly the fields of the last configuration, a field the hook stops returning is removed by
// the next apply, unless another manager also owns it.
//
// observed is the child as the cache last saw it, or nil when the cache has none. When
// UpToDate holds, Apply sends no request and returns Unchanged. Otherwise it returns Created
// (observed was nil) or Updated. When observed is not nil its UID is sent as a precondition,
// so a child deleted, or deleted and recreated by someone else, since it was observed is
// neither recreated nor written (ErrConflict); a later sync decides again.
//
// observed must be nil only when the cache holds no object of that name. Should the cache lag
// behind an object of that name, the create fails with ErrConflict and nothing is written.
//
// Errors: ErrInvalid (bad desired or owner, or a namespace that does not fit res) and
// ErrNotOwned (the child is controlled by another owner) must not be retried as they are:
// requeue and claim again; ErrConflict means requeue; anything else comes from the API server
// (e.g. 422 Invalid when the object fails validation, or a 404 when its namespace does not
// exist) or the transport and is worth a retry with backoff only if transient.
func (a *Applier) Apply(ctx context.Context, res Resource, owner metav1.OwnerReference, desired, observed *unstructured.Unstructured) (Action, error) {
	config, hash, err := configuration(owner, desired)
	if err != nil {
		return Unchanged, err
	}
	action, _, err := a.apply(ctx, res, owner, config, hash, observed)
	return action, err
}

// apply is Apply with a configuration already made. It also returns the object as stored:
// the server's answer when it wrote, observed when nothing was sent, nil on error.
func (a *Applier) apply(ctx context.Context, res Resource, owner metav1.OwnerReference, config *unstructured.Unstructured,
	hash string, observed *unstructured.Unstructured) (Action, *unstructured.Unstructured, error) {
	if observed != nil {
		if err := checkObserved(res, owner, config, observed); err != nil {
			return Unchanged, nil, err
		}
		if upToDate(config, hash, observed) {
			return Unchanged, observed, nil
		}
	}
	return a.write(ctx, res, config, hash, observed)
}

// write creates config when observed is nil, else applies it over observed, which the caller
// has checked (checkObserved) and found out of date; it returns what apply does.
func (a *Applier) write(ctx context.Context, res Resource, config *unstructured.Unstructured, hash string,
	observed *unstructured.Unstructured) (Action, *unstructured.Unstructured, error) {
	client, err := a.resourceFor(res, config)
	if err != nil {
		return Unchanged, nil, err
	}
	if observed == nil {
		stored, err := a.create(ctx, res, client, config, hash)
		if err != nil {
			return Unchanged, nil, err
		}
		return Created, stored, nil
	}
	if created(observed) {
		if err := a.adoptCreatedFields(ctx, res, client, observed); err != nil {
			return Unchanged, nil, err
		}
	}
	// A uid in an apply configuration is a precondition, not a field to set.
	config.SetUID(observed.GetUID())
	stored, err := client.Apply(ctx, config.GetName(), config, metav1.ApplyOptions{FieldManager: a.manager, Force: true})
	if err != nil {
		if invalidField(err, "metadata.ownerReferences") {
			// The configuration holds one valid ControllerRef, ours, so the live object has
			// another: the cache did not know it yet.
			return Unchanged, nil, fmt.Errorf("apply %s: %w: %w", describe(res, config), ErrNotOwned, err)
		}
		return Unchanged, nil, classify("apply", res, config, err)
	}
	return Updated, stored, nil
}

// checkObserved refuses to write over an observed object that is not the desired one or is
// controlled by another owner.
func checkObserved(res Resource, owner metav1.OwnerReference, desired, observed *unstructured.Unstructured) error {
	if observed.GetName() != desired.GetName() || observed.GetNamespace() != desired.GetNamespace() {
		return fmt.Errorf("%w: observed %s is not desired %s", ErrInvalid, describe(res, observed), describe(res, desired))
	}
	if observed.GetUID() == "" {
		return fmt.Errorf("%w: observed %s has no metadata.uid", ErrInvalid, describe(res, observed))
	}
	if ref, ok := controllerOf(observed); ok && ref.UID != owner.UID {
		return fmt.Errorf("%w: %s is controlled by %s %s", ErrNotOwned, describe(res, observed), ref.Kind, ref.Name)
	}
	return nil
}

// Delete deletes the observed child with background propagation, on the precondition that
// it still has observed's UID, so that a child replaced by a new object of the same name is
// left alone. It sends no resourceVersion precondition: a child no longer wanted is deleted
// whatever else changed in it.
//
// Errors: ErrGone (already deleted; nothing to do, requeue is optional), ErrConflict (replaced
// by a new object: requeue to decide about the new one), ErrInvalid (observed lacks name or
// UID or its namespace does not fit res: do not retry); anything else is worth a retry.
func (a *Applier) Delete(ctx context.Context, res Resource, observed *unstructured.Unstructured) error {
	return a.delete(ctx, res, observed, false)
}

// delete is Delete, optionally also on the precondition of observed's resourceVersion, so
// that a child that changed since it was judged out of date is judged again first.
func (a *Applier) delete(ctx context.Context, res Resource, observed *unstructured.Unstructured, matchVersion bool) error {
	client, err := a.resourceFor(res, observed)
	if err != nil {
		return err
	}
	uid := observed.GetUID()
	if uid == "" {
		return fmt.Errorf("%w: observed %s has no metadata.uid", ErrInvalid, describe(res, observed))
	}
	pre := &metav1.Preconditions{UID: &uid}
	if matchVersion {
		rv := observed.GetResourceVersion()
		pre.ResourceVersion = &rv
	}
	background := metav1.DeletePropagationBackground
	err = client.Delete(ctx, observed.GetName(), metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &background})
	if err != nil {
		return classify("delete", res, observed, err)
	}
	return nil
}
