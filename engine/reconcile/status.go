package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// ReplaceStatus replaces the status of a parent whose status is its controller's alone
// (CompositeController, MapController) with status, plus observedGeneration and the engine's
// Synced condition when the parent has one, and sends nothing when the cached status already
// equals it. It uses the status subresource when the resource has one. It returns the parent
// as stored, or nil when nothing was sent or the parent is gone.
func ReplaceStatus(ctx context.Context, client dynamic.Interface, res ParentResource, fieldManager string,
	parent *unstructured.Unstructured, status map[string]any) (*unstructured.Unstructured, error) {
	want := make(map[string]any, len(status)+1)
	for key, v := range CarryCondition(parent, status, SyncedCondition) {
		want[key] = v
	}
	want["observedGeneration"] = parent.GetGeneration()
	have, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status")
	if SameJSON(have, want) {
		return nil, nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": parent.GetUID()},
		{"op": "add", "path": "/status", "value": want},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	var sub []string
	if res.HasStatus {
		sub = []string{"status"}
	}
	stored, err := ParentClient(client, res, parent).Patch(ctx, parent.GetName(), types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager}, sub...)
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

// SetCondition returns status with cond in its conditions, replacing the entry of cond's
// type (status is not modified; nil is an empty status). cond's lastTransitionTime is the
// parent's for that type while its status stays the same, and now when it changes, so that
// rewriting an unchanged condition changes nothing.
func SetCondition(parent *unstructured.Unstructured, status, cond map[string]any) map[string]any {
	cond["lastTransitionTime"] = metav1.NewTime(time.Now()).UTC().Format(time.RFC3339)
	if cur := findCondition(parent, cond["type"].(string)); cur != nil && cur["status"] == cond["status"] {
		if t, ok := cur["lastTransitionTime"].(string); ok {
			cond["lastTransitionTime"] = t
		}
	}
	out := make(map[string]any, len(status)+1)
	for k, v := range status {
		out[k] = v
	}
	list, _ := out["conditions"].([]any)
	next := make([]any, 0, len(list)+1)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == cond["type"] {
			continue
		}
		next = append(next, c)
	}
	out["conditions"] = append(next, cond)
	return out
}
