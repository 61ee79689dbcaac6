package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/engine/trace"
)

// parentClient returns the client of parent's resource (Config.Parents[res]) and namespace.
func (r *Runner) parentClient(res int, parent *unstructured.Unstructured) dynamic.ResourceInterface {
	c := r.cfg.Client.Resource(r.parents[res].GVR)
	if r.parents[res].Namespaced {
		return c.Namespace(parent.GetNamespace())
	}
	return c
}

// recheckParent confirms with a live read that the parent still exists under its UID and is
// not being deleted, before anything is adopted for it.
func (r *Runner) recheckParent(ctx context.Context, res int, parent *unstructured.Unstructured) error {
	live, err := r.parentClient(res, parent).Get(ctx, parent.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("rechecking parent before adoption: %w", err)
	}
	if live.GetUID() != parent.GetUID() {
		return fmt.Errorf("parent was replaced (UID %s, cached %s); not adopting", live.GetUID(), parent.GetUID())
	}
	if live.GetDeletionTimestamp() != nil {
		return errors.New("parent is being deleted; not adopting")
	}
	return nil
}

// patchFinalizers adds (add true) or removes the controller's finalizer with a merge patch
// guarded by the parent's uid and resourceVersion: a conflict means the cache is behind, and
// the reconcile is retried. A parent that is gone needs nothing.
func (r *Runner) patchFinalizers(ctx context.Context, res int, parent *unstructured.Unstructured, add bool) error {
	_, err := r.patchFinalizersTo(ctx, res, parent, add)
	return err
}

// patchFinalizersTo is patchFinalizers, returning the parent as stored (nil when it is gone
// or the patch failed).
func (r *Runner) patchFinalizersTo(ctx context.Context, res int, parent *unstructured.Unstructured, add bool) (*unstructured.Unstructured, error) {
	finalizers := []string{}
	for _, f := range parent.GetFinalizers() {
		if f != r.finalizer {
			finalizers = append(finalizers, f)
		}
	}
	if add {
		finalizers = append(finalizers, r.finalizer)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      finalizers,
		"uid":             parent.GetUID(),
		"resourceVersion": parent.GetResourceVersion(),
	}})
	stored, err := r.parentClient(res, parent).Patch(ctx, parent.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	op := "remove finalizer"
	if add {
		op = "add finalizer"
	}
	trace.SpanOf(ctx).Write(op, r.parents[res].Describe(parent), err)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("updating finalizers: %w", err)
	}
	return stored, nil
}
