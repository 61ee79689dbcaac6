package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/apply"
)

// writeParent writes what a valid outcome says of the parent itself, after its children:
// the status a kind computed (replaceStatus), or a decorator's labels, annotations and status
// by server-side apply, the one kind whose parent is someone else's object. It returns the
// parent as stored, or nil when it sent nothing.
func (r *Runner) writeParent(ctx context.Context, res int, parent *unstructured.Unstructured, out *Outcome) (*unstructured.Unstructured, error) {
	switch {
	case out.Decoration != nil:
		p := r.parents[res]
		return r.apply.Decorate(ctx, apply.Resource{GVR: p.GVR, Namespaced: p.Namespaced}, parent,
			apply.DecorationRecord(r.cfg.Name), p.HasStatus, *out.Decoration)
	case out.Status != nil || len(out.Conditions) > 0:
		return r.replaceStatus(ctx, res, parent, statusWithConditions(parent, out.Status, out.Conditions))
	}
	return nil, nil
}

// replaceStatus replaces the status of a parent whose status is its controller's alone
// (CompositeController, MapController) with status plus observedGeneration, and sends
// nothing when the cached status already equals it. It uses the status subresource when the
// resource has one. It returns the parent as stored, or nil when nothing was sent or the
// parent is gone.
func (r *Runner) replaceStatus(ctx context.Context, res int, parent *unstructured.Unstructured, status map[string]any) (*unstructured.Unstructured, error) {
	status["observedGeneration"] = parent.GetGeneration()
	have, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status")
	if SameJSON(have, status) {
		return nil, nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": parent.GetUID()},
		{"op": "add", "path": "/status", "value": status},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	var sub []string
	if r.parents[res].HasStatus {
		sub = []string{"status"}
	}
	stored, err := r.parentClient(res, parent).Patch(ctx, parent.GetName(), types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: r.cfg.FieldManager}, sub...)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return stored, nil
}

// SameJSON reports whether two JSON-shaped values are equal as JSON: numbers compare by
// value, so the int64 the cache holds equals the float64 a hook returned for the same number.
// It allocates nothing, since every reconcile that writes a status calls it.
func SameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for key, v := range x {
			w, ok := y[key]
			if !ok || !SameJSON(v, w) {
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
			if !SameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if n, ok := Number(a); ok {
		m, ok := Number(b)
		return ok && n == m
	}
	return a == b
}

// ParentFingerprint changes whenever what a hook may be assumed to read of a parent changes,
// but not when only its status does: its UID, generation, labels and annotations. Kinds and
// the skeleton reuse hook answers while it stands.
func ParentFingerprint(p *unstructured.Unstructured) string {
	data, _ := json.Marshal([]any{p.GetUID(), p.GetLabels(), p.GetAnnotations()})
	sum := sha256.Sum256(data)
	return strconv.FormatInt(p.GetGeneration(), 10) + "/" + hex.EncodeToString(sum[:8])
}
