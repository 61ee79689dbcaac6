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

// Step is one child's reconcile as Plan decided it from the cache alone: either done, with
// no request needed, or a request for Send to send. A Step is used once.
type Step struct {
	res               Resource
	desired, observed *unstructured.Unstructured
	method            v1alpha1.ChildUpdateMethod
	config            *unstructured.Unstructured // the configuration to apply, nil when deleting
	hash              string
	done              Action // Unchanged or Skipped when no request is needed, else ""
}

// Done reports whether the step needs no request, and then what was done (Unchanged or
// Skipped) and the child as stored: observed.
func (s *Step) Done() (Action, *unstructured.Unstructured, bool) {
	return s.done, s.observed, s.done != ""
}

// Plan decides how one child of owner moves towards its desired state under the update
// method, from the cache alone, and Send sends the request it needs, if any. desired is the
// child the hook returned, or nil if the hook no longer wants it; observed is the claimed
// child from the cache, or nil if there is none (observed must not be controlled by another
// owner).
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
// Plan is pure computation, cheap enough to call for every child at every sync, and safe for
// concurrent use. Its errors are ErrInvalid, ErrNotOwned and ErrUnsupportedMethod; Send's
// are those of Apply and Delete: ErrGone and ErrConflict mean requeue; anything else is
// worth a retry with backoff.
func Plan(res Resource, owner metav1.OwnerReference, desired, observed *unstructured.Unstructured, method v1alpha1.ChildUpdateMethod) (*Step, error) {
	s := new(Step)
	if err := PlanInto(s, res, owner, desired, observed, method); err != nil {
		return nil, err
	}
	return s, nil
}

// PlanInto is Plan writing the step into s, for a caller that keeps its steps together: every
// sync plans every child. After an error s holds no step.
func PlanInto(s *Step, res Resource, owner metav1.OwnerReference, desired, observed *unstructured.Unstructured, method v1alpha1.ChildUpdateMethod) error {
	*s = Step{}
	switch method {
	case "", v1alpha1.ChildUpdateOnDelete, v1alpha1.ChildUpdateRecreate, v1alpha1.ChildUpdateInPlace:
	case v1alpha1.ChildUpdateRollingRecreate, v1alpha1.ChildUpdateRollingInPlace:
		return fmt.Errorf("%w: %s is not supported yet; use OnDelete, Recreate or InPlace", ErrUnsupportedMethod, method)
	default:
		return fmt.Errorf("%w: unknown update method %q", ErrUnsupportedMethod, method)
	}
	step := Step{res: res, desired: desired, observed: observed, method: method}
	if desired == nil {
		if observed == nil {
			return fmt.Errorf("%w: neither a desired nor an observed child", ErrInvalid)
		}
		if ref, ok := controllerOf(observed); ok && ref.UID != owner.UID {
			return fmt.Errorf("%w: %s is controlled by %s %s", ErrNotOwned, describe(res, observed), ref.Kind, ref.Name)
		}
		if observed.GetDeletionTimestamp() != nil {
			step.done = Skipped
		}
		*s = step
		return nil
	}
	if observed != nil {
		if same, ok := unchanged(&owner, desired, observed); ok && same {
			if err := checkObserved(res, owner, desired, observed); err != nil {
				return err
			}
			step.done = Unchanged // the configuration is not needed: nothing is sent
			*s = step
			return nil
		}
	}
	config, hash, err := configuration(owner, desired)
	if err != nil {
		return err
	}
	step.config, step.hash = config, hash
	if observed != nil {
		if err := checkObserved(res, owner, config, observed); err != nil {
			return err
		}
		switch {
		case upToDate(config, hash, observed):
			step.done = Unchanged
		case observed.GetDeletionTimestamp() != nil:
			step.done = Skipped
		case method != v1alpha1.ChildUpdateRecreate && method != v1alpha1.ChildUpdateInPlace:
			step.done = Skipped
		}
	}
	*s = step
	return nil
}

// Send sends the request a step that is not done needs, and says what it did and the child
// as now stored, as far as this call knows: the server's answer when it applied (Created,
// Updated), nil when it deleted the child or failed. Its errors are Apply's and Delete's.
func (a *Applier) Send(ctx context.Context, s *Step) (Action, *unstructured.Unstructured, error) {
	if action, stored, done := s.Done(); done {
		return action, stored, nil
	}
	switch {
	case s.desired == nil:
		if err := a.Delete(ctx, s.res, s.observed); err != nil {
			return Unchanged, nil, err
		}
		return Deleted, nil, nil
	case s.observed == nil:
		return a.write(ctx, s.res, s.config, s.hash, nil)
	case s.method == v1alpha1.ChildUpdateRecreate:
		if err := a.delete(ctx, s.res, s.observed, true); err != nil {
			return Unchanged, nil, err
		}
		return Deleted, nil, nil
	}
	return a.write(ctx, s.res, s.config, s.hash, s.observed) // Plan checked it and found it out of date
}

// Planned says what Send would do for a step that is not done, were every request to
// succeed, and the object it would send: the configuration it creates (as create records it)
// or applies, or the observed child it deletes (Recreate deletes first; a later sync creates
// the replacement). For a done step it is Done's action and the observed child. The object is
// the step's own: read-only. The offline commands show it; the engine sends it.
func (s *Step) Planned() (Action, *unstructured.Unstructured) {
	if action, observed, done := s.Done(); done {
		return action, observed
	}
	switch {
	case s.desired == nil, s.method == v1alpha1.ChildUpdateRecreate && s.observed != nil:
		return Deleted, s.observed
	case s.observed == nil:
		created := s.config.DeepCopy()
		annotations := created.GetAnnotations()
		annotations[AppliedHashAnnotation] = CreatedHashPrefix + s.hash
		created.SetAnnotations(annotations)
		return Created, created
	}
	return Updated, s.config
}
