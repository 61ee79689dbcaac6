package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/apply"
)

// SyncedCondition is the condition type the engine keeps in a parent's status.conditions
// once one of its writes was refused: False naming each refused object and the API
// server's message, True again after a reconcile in which every write succeeded. A parent
// none of whose writes was ever refused carries no such condition.
const SyncedCondition = "Synced"

// writeErrors collects the failures of one reconcile's writes. Refusals (the API server
// rejected the write: invalid, forbidden, ...; or it could not be reached) are reported on the
// parent; transient failures (the object changed or vanished since it was observed) only
// requeue it.
type writeErrors struct {
	refused   []refusal
	transient []error
}

type refusal struct {
	object string
	err    error
}

func (e *writeErrors) add(object string, err error) {
	if isTransient(err) {
		e.transient = append(e.transient, fmt.Errorf("%s: %w", object, err))
		return
	}
	e.refused = append(e.refused, refusal{object: object, err: err})
}

func (e *writeErrors) transientErr(err error) { e.transient = append(e.transient, err) }

func (e *writeErrors) empty() bool { return len(e.refused) == 0 && len(e.transient) == 0 }

func (e *writeErrors) join() error {
	errs := append([]error{}, e.transient...)
	for _, r := range e.refused {
		errs = append(errs, fmt.Errorf("%s: %w", r.object, r.err))
	}
	return errors.Join(errs...)
}

// isTransient reports whether a write failed only because the cache was behind: a newer
// reconcile decides again without anything to report.
func isTransient(err error) bool {
	return errors.Is(err, apply.ErrConflict) || errors.Is(err, apply.ErrGone) || errors.Is(err, apply.ErrNotOwned) ||
		apierrors.IsConflict(err)
}

// serverMessage is what the API server said about a refused write, or the whole error when
// it did not answer.
func serverMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// reportWrites reports the refusals of one reconcile on the parent: a Warning Event
// (WriteFailed) for each refused object, and the Synced condition. It returns the error of
// writing the condition.
func (r *Runner) reportWrites(ctx context.Context, res int, parent *unstructured.Unstructured, errs *writeErrors) error {
	for _, ref := range errs.refused {
		r.event(parent, corev1.EventTypeWarning, "WriteFailed", ref.object+": "+serverMessage(ref.err))
	}
	var cond map[string]any
	switch {
	case len(errs.refused) > 0:
		msgs := make([]string, len(errs.refused))
		for i, ref := range errs.refused {
			msgs[i] = ref.object + ": " + serverMessage(ref.err)
		}
		cond = syncedCondition(metav1.ConditionFalse, "WriteFailed", truncate(strings.Join(msgs, "; "), 4096))
	case errs.empty():
		if existing := FindCondition(parent, SyncedCondition); existing == nil {
			return nil // never refused: nothing to say
		}
		cond = syncedCondition(metav1.ConditionTrue, "Synced", "every write of the last reconcile succeeded")
	default:
		return nil // transient only: the next reconcile decides
	}
	return r.setCondition(ctx, res, parent, cond)
}

// stoppedBy reports a write of object that failed before the reconcile wrote its children
// (the parent's finalizer, the revisions of a rolling update) as reportWrites reports the
// others, since the reconcile stops there and writes nothing more, and returns err.
func (r *Runner) stoppedBy(ctx context.Context, res int, parent *unstructured.Unstructured, object string, err error) error {
	var errs writeErrors
	errs.add(object, err)
	if rerr := r.reportWrites(ctx, res, parent, &errs); rerr != nil {
		return errors.Join(err, fmt.Errorf("%s status: %w", r.parents[res].Describe(parent), rerr))
	}
	return err
}

func syncedCondition(status metav1.ConditionStatus, reason, msg string) map[string]any {
	return map[string]any{"type": SyncedCondition, "status": string(status), "reason": reason, "message": msg}
}

// setCondition puts cond into the parent's status.conditions, replacing the entry of its
// type and keeping every other entry as it is, unless the parent already has it (equal type,
// status, reason and message). The merge patch is guarded by uid and resourceVersion, and
// goes to the status subresource when the resource has one.
func (r *Runner) setCondition(ctx context.Context, res int, parent *unstructured.Unstructured, cond map[string]any) error {
	if cur := FindCondition(parent, cond["type"].(string)); cur != nil &&
		cur["status"] == cond["status"] && cur["reason"] == cond["reason"] && cur["message"] == cond["message"] {
		return nil
	}
	stampCondition(parent, cond, r.now())
	next := replaceCondition(conditionList(parent), cond)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": parent.GetUID(), "resourceVersion": parent.GetResourceVersion()},
		"status":   map[string]any{"conditions": next},
	})
	if err != nil {
		return err
	}
	var sub []string
	if r.parents[res].HasStatus {
		sub = []string{"status"}
	}
	_, err = r.parentClient(res, parent).Patch(ctx, parent.GetName(), types.MergePatchType, patch, metav1.PatchOptions{
		FieldManager: r.fieldManager}, sub...)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
