package revision

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Store writes a parent's revisions: ControllerRevisions in the parent's namespace (in
// Namespace for a cluster-scoped parent), owned by it, by server-side apply under the
// controller's field manager.
type Store struct {
	Client       dynamic.Interface
	FieldManager string
	Namespace    string
}

// Write makes the revision writes of w for parent, creates and updates first (the latest
// revision's list records a moved child before the older one forgets it), deletes last. It
// stops at the first error: the reconcile writes no child after a failed revision write.
func (s Store) Write(ctx context.Context, parent *unstructured.Unstructured, w Writes) error {
	ns := parent.GetNamespace()
	if ns == "" {
		ns = s.Namespace
	}
	client := s.Client.Resource(v1alpha1.ControllerRevisionResource).Namespace(ns)
	owner := *metav1.NewControllerRef(parent, parent.GroupVersionKind())
	for _, r := range append(append([]Revision{}, w.Create...), w.Update...) {
		obj := &unstructured.Unstructured{Object: Object(r, ns)}
		obj.SetOwnerReferences([]metav1.OwnerReference{owner})
		if _, err := client.Apply(ctx, r.Name, obj, metav1.ApplyOptions{FieldManager: s.FieldManager, Force: true}); err != nil {
			return fmt.Errorf("writing ControllerRevision %s: %w", r.Name, err)
		}
	}
	for _, r := range w.Delete {
		err := client.Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s: %w", r.Name, err)
		}
	}
	return nil
}
