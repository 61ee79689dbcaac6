package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/reconcile"
)

// ControllerFinalizer is the engine's finalizer on every controller resource it runs: a
// deleted controller stays until no parent holds its runner's finalizer, so that deleting a
// controller never leaves parents that cannot be deleted.
const ControllerFinalizer = "metascript.dev/release-parents"

// Removal defaults.
const (
	defaultRemovalGrace = 5 * time.Minute
	// removalPoll is how often a deleted controller's parents are counted again.
	removalPoll = 200 * time.Millisecond
)

// remove runs the removal of a deleted controller: its runner releases the parents and
// finalizes those being deleted (reconcile.Runner.Remove); once no parent holds the runner's
// finalizer, the engine's finalizer goes and the controller with it. A controller whose hooks
// could not be built has no runner to finalize with: it goes at once, with a Warning Event
// naming the finalizer its parents may still hold; so does one whose parents still hold it
// after twice the grace (releases that keep failing), so that no controller is stuck either.
func (m *Manager) remove(ctx context.Context, k key, u *unstructured.Unstructured, cur *running) error {
	if !slices.Contains(u.GetFinalizers(), ControllerFinalizer) {
		return nil // nothing of the engine's holds it: its deletion stops the runner
	}
	if cur == nil || cur.runner == nil || cur.uid != u.GetUID() {
		m.opts.Recorder.Event(u, corev1.EventTypeWarning, "ParentsNotReleased", fmt.Sprintf(
			"the controller was deleted while it did not run: parents holding finalizer %s%s keep it; remove it from them by hand",
			m.kinds[k.kind].FinalizerPrefix, u.GetName()))
		return m.holdController(ctx, k, u, false)
	}
	grace := m.opts.RemovalGrace
	if grace <= 0 {
		grace = defaultRemovalGrace
	}
	cur.runner.Remove(grace)
	if sh := m.opts.Shard; sh != nil && !sh.Leads(m.statusKey(k)) {
		m.queue.AddAfter(k, removalPoll) // every member releases its own parents; one lets the controller go
		return nil
	}
	n, err := cur.runner.Holding(ctx, func(ctx context.Context, res reconcile.ParentResource, ns string) (*unstructured.UnstructuredList, error) {
		return m.opts.Dynamic.Resource(res.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	})
	if err != nil {
		return err
	}
	if n > 0 && time.Since(cur.runner.RemovalSince()) < 2*grace {
		m.opts.Log.Info("controller deleted: waiting for its parents to be released", "controller", m.ref(k), "holding", n)
		m.queue.AddAfter(k, removalPoll)
		return nil
	}
	if n > 0 { // releases keep failing (the controller's account may no longer patch its parents)
		m.opts.Recorder.Event(u, corev1.EventTypeWarning, "ParentsNotReleased", fmt.Sprintf(
			"the controller was deleted and %d parent(s) still hold finalizer %s%s after %s: the engine lets the controller go; remove it from them by hand",
			n, m.kinds[k.kind].FinalizerPrefix, u.GetName(), 2*grace))
	}
	m.opts.Log.Info("controller deleted: every parent released", "controller", m.ref(k))
	return m.holdController(ctx, k, u, false)
}

// holdController adds (hold) or removes the engine's finalizer on a controller resource, by
// a merge patch guarded by its uid and resourceVersion: a conflict retries the key.
func (m *Manager) holdController(ctx context.Context, k key, u *unstructured.Unstructured, hold bool) error {
	has := slices.Contains(u.GetFinalizers(), ControllerFinalizer)
	if has == hold {
		return nil
	}
	finalizers := slices.DeleteFunc(slices.Clone(u.GetFinalizers()), func(f string) bool { return f == ControllerFinalizer })
	if hold {
		finalizers = append(finalizers, ControllerFinalizer)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "uid": u.GetUID(), "resourceVersion": u.GetResourceVersion()}})
	_, err := m.opts.Dynamic.Resource(m.kinds[k.kind].Resource).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(),
		types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s finalizer %s: %w", map[bool]string{true: "adding", false: "removing"}[hold], ControllerFinalizer, err)
	}
	return nil
}
