package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/engine/trace"
)

// parentClient returns the client of parent's resource (Config.Parents[res]) and namespace.
func (r *Runner) parentClient(res int, parent *unstructured.Unstructured) dynamic.ResourceInterface {
	return r.parentClientOf(r.cfg.Client, res, parent)
}

// parentClientOf is parentClient through client.
func (r *Runner) parentClientOf(client dynamic.Interface, res int, parent *unstructured.Unstructured) dynamic.ResourceInterface {
	c := client.Resource(r.parents[res].GVR)
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
	if !add && apierrors.IsForbidden(err) {
		stored, err = r.releaseAsEngine(ctx, res, parent, patch, err)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("updating finalizers: %w", err)
	}
	return stored, nil
}

// releaseAsEngine removes the controller's finalizer from parent with the engine's own
// client, once the controller's account was refused that (refused) while the controller is
// being removed: a tenant whose RoleBinding went with its controller would otherwise leave
// the parent, and its namespace, deleting for ever. patch is the one the account was
// refused: it removes the controller's finalizer and nothing else, guarded by the parent's
// uid and resourceVersion. A Warning Event and a log line say so. A controller not being
// removed, or without Env.EngineClient, returns refused as it was: the account decides.
func (r *Runner) releaseAsEngine(ctx context.Context, res int, parent *unstructured.Unstructured, patch []byte, refused error) (*unstructured.Unstructured, error) {
	if r.removing.Load() == nil || r.cfg.EngineClient == nil {
		return nil, refused
	}
	stored, err := r.parentClientOf(r.cfg.EngineClient, res, parent).Patch(ctx, parent.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	trace.SpanOf(ctx).Write("remove finalizer as the engine", r.parents[res].Describe(parent), err)
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("the controller is being deleted and its account may no longer remove finalizer %s (%s): the engine removed it with its own rights",
		r.finalizer, serverMessage(refused))
	r.cfg.Recorder.Event(parent, corev1.EventTypeWarning, "FinalizerReleasedByEngine", truncate(msg, 1024))
	r.cfg.Log.Info("finalizer removed with the engine's rights: the controller's account may no longer remove it",
		"parent", r.parents[res].Describe(parent), "finalizer", r.finalizer, "error", serverMessage(refused))
	return stored, nil
}
