package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/trace"
)

// writeParent writes what a valid outcome says of the parent itself, after its children:
// the status a kind computed (replaceStatus), or a decorator's labels, annotations and status
// by server-side apply, the one kind whose parent is someone else's object. It returns the
// parent as stored, or nil when it sent nothing.
func (r *Runner) writeParent(ctx context.Context, res int, parent *unstructured.Unstructured, out *Outcome) (*unstructured.Unstructured, error) {
	switch {
	case out.Decoration != nil:
		p := r.parents[res]
		stored, err := r.apply.Decorate(ctx, apply.Resource{GVR: p.GVR, Namespaced: p.Namespaced}, parent,
			apply.DecorationRecord(r.built.MarkName()), p.HasStatus, *out.Decoration)
		if stored != nil || err != nil {
			trace.SpanOf(ctx).Write("decorate", p.Describe(parent), err)
		}
		return stored, err
	case out.Status != nil || len(out.Conditions) > 0:
		if status, changed := r.newStatus(parent, out); changed {
			stored, err := r.replaceStatus(ctx, res, parent, status)
			trace.SpanOf(ctx).Write("status", r.parents[res].Describe(parent), err)
			return stored, err
		}
	}
	return nil, nil
}

// newStatus is the status a valid outcome gives a parent whose status is its controller's
// alone (CompositeController, MapController): out's status with its conditions put in and
// observedGeneration set; changed is false, and status nil, when the cached status already
// equals it. Only call it for an outcome with a Status or Conditions.
func (r *Runner) newStatus(parent *unstructured.Unstructured, out *Outcome) (status map[string]any, changed bool) {
	// Most reconciles change no status: it is built in a map of the pool, which goes back
	// unless it is the new status.
	status = statusWithConditions(statusMaps.Get().(map[string]any), parent, out.Status, out.Conditions, r.now())
	status["observedGeneration"] = parent.GetGeneration()
	have, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status")
	if protocol.SameJSON(have, status) {
		clear(status)
		statusMaps.Put(status)
		return nil, false
	}
	return status, true
}

// statusMaps are empty maps for newStatus.
var statusMaps = sync.Pool{New: func() any { return map[string]any{} }}

// replaceStatus replaces the status of a parent (newStatus) with status, using the status
// subresource when the resource has one. It returns the parent as stored, or nil when the
// parent is gone.
func (r *Runner) replaceStatus(ctx context.Context, res int, parent *unstructured.Unstructured, status map[string]any) (*unstructured.Unstructured, error) {
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
		metav1.PatchOptions{FieldManager: r.fieldManager}, sub...)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return stored, nil
}
