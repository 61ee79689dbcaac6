package composite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/engine/apply"
)

func (r *Runner) applier() *apply.Applier { return r.apply }

func (r *Runner) applyResource(rule int) apply.Resource {
	return apply.Resource{GVR: r.rules[rule].GVR, Namespaced: r.rules[rule].Namespaced}
}

func (r *Runner) parentClient(parent *unstructured.Unstructured) dynamic.ResourceInterface {
	c := r.cfg.Client.Resource(r.cfg.Parent.GVR)
	if r.cfg.Parent.Namespaced {
		return c.Namespace(parent.GetNamespace())
	}
	return c
}

// addFinalizer adds the controller's finalizer with a merge patch guarded by the cached
// resourceVersion: a conflict means the cache is behind, and the reconcile is retried.
func (r *Runner) addFinalizer(ctx context.Context, parent *unstructured.Unstructured) error {
	return r.patchFinalizers(ctx, parent, append(append([]string{}, parent.GetFinalizers()...), r.finalizer))
}

// removeFinalizer removes the controller's finalizer the same way.
func (r *Runner) removeFinalizer(ctx context.Context, parent *unstructured.Unstructured) error {
	var keep []string
	for _, f := range parent.GetFinalizers() {
		if f != r.finalizer {
			keep = append(keep, f)
		}
	}
	return r.patchFinalizers(ctx, parent, keep)
}

func (r *Runner) patchFinalizers(ctx context.Context, parent *unstructured.Unstructured, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      finalizers,
		"uid":             parent.GetUID(),
		"resourceVersion": parent.GetResourceVersion(),
	}})
	_, err := r.parentClient(parent).Patch(ctx, parent.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating finalizers: %w", err)
	}
	return nil
}

// writeStatus replaces the parent's status with the hook's, plus observedGeneration, and
// sends nothing when the cached status already equals it. It uses the status subresource
// and falls back to the main resource for parents whose CRD has none.
func (r *Runner) writeStatus(ctx context.Context, parent *unstructured.Unstructured, status map[string]any) error {
	want := make(map[string]any, len(status)+1)
	for k, v := range status {
		want[k] = v
	}
	want["observedGeneration"] = parent.GetGeneration()
	have, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status")
	if sameJSON(have, want) {
		return nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": parent.GetUID()},
		{"op": "add", "path": "/status", "value": want},
	})
	if err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	c := r.parentClient(parent)
	_, err = c.Patch(ctx, parent.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		_, err = c.Patch(ctx, parent.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// sameJSON reports whether two JSON-shaped values are equal as JSON: numbers compare by
// value, so the int64 the cache holds equals the float64 a hook returned for the same number.
// It allocates nothing, since every reconcile that returns a status calls it.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if n, ok := number(a); ok {
		m, ok := number(b)
		return ok && n == m
	}
	return a == b
}

func fromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

func metav1LabelSelectorAsSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return nil, errors.New("no selector")
	}
	return metav1.LabelSelectorAsSelector(ls)
}
