package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"

	"metascript.dev/metascript/engine/wire"
)

// A new child is made by a plain create, not a server-side apply: the API server spends
// about half the CPU on it, and cold convergence is mostly creates. The create carries this
// Applier's field manager, so the server records the child's fields under an Update entry of
// that manager, which a later apply would not take over: a field the hook stops returning
// would stay. So the first apply to a created child turns that entry into the manager's
// Apply entry first (adoptCreatedFields), and from then on the child is as if it had been
// applied. The AppliedHashAnnotation tells created children apart, as the cache drops
// managedFields: it reads CreatedHashPrefix followed by the hash.

// CreatedHashPrefix starts the AppliedHashAnnotation of a child made by a plain create whose
// fields the field manager does not own as an applier yet.
const CreatedHashPrefix = "created:"

// created reports whether observed was made by a plain create and not applied since.
func created(observed *unstructured.Unstructured) bool {
	return strings.HasPrefix(observed.GetAnnotations()[AppliedHashAnnotation], CreatedHashPrefix)
}

// create makes the child config describes, recording hash as created. It fails with
// ErrConflict when an object of that name exists already (the cache did not know it):
// claiming must decide about that object first.
func (a *Applier) create(ctx context.Context, res Resource, client dynamic.ResourceInterface, config *unstructured.Unstructured,
	hash string) (*unstructured.Unstructured, error) {
	annotations := config.GetAnnotations()
	annotations[AppliedHashAnnotation] = CreatedHashPrefix + hash
	config.SetAnnotations(annotations)
	// Strict: refuse unknown fields, as an apply does, rather than drop them with a warning.
	stored, err := client.Create(ctx, config, metav1.CreateOptions{FieldManager: a.manager, FieldValidation: "Strict"})
	switch {
	case err == nil:
		return stored, nil
	case apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create %s: %w: %w", describe(res, config), ErrConflict, err)
	case apierrors.IsNotFound(err):
		// It is not the object that is missing but what it lives in (its namespace), which
		// no requeue brings back.
		return nil, fmt.Errorf("create %s: %w", describe(res, config), err)
	}
	return nil, classify("create", res, config, err)
}

// adoptCreatedFields turns the Update entry the create of observed left for this Applier's
// field manager into its Apply entry, so that the apply that follows owns every field it
// made. Right after a create that entry is the only one; the first attempt counts on that
// (a JSON patch testing it) and costs one request. Otherwise the object is read and its
// managed fields rewritten under a resourceVersion precondition.
func (a *Applier) adoptCreatedFields(ctx context.Context, res Resource, client dynamic.ResourceInterface, observed *unstructured.Unstructured) error {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": observed.GetUID()},
		{"op": "test", "path": "/metadata/managedFields/0/manager", "value": a.manager},
		{"op": "test", "path": "/metadata/managedFields/0/operation", "value": metav1.ManagedFieldsOperationUpdate},
		{"op": "replace", "path": "/metadata/managedFields/0/operation", "value": metav1.ManagedFieldsOperationApply},
	})
	if err != nil {
		return err
	}
	_, err = client.Patch(ctx, observed.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: a.manager})
	if err == nil {
		return nil
	}
	if apierrors.IsNotFound(err) {
		// Deleted since observed: like an apply with its uid precondition, write nothing.
		return fmt.Errorf("patch managedFields of %s: %w: %w", describe(res, observed), ErrConflict, err)
	}
	// csaupgrade reads managed fields, which the engine's answers leave out.
	reader, err := resourceIn(wire.Whole(a.client), res, observed)
	if err != nil {
		return err
	}
	live, err := reader.Get(ctx, observed.GetName(), metav1.GetOptions{})
	if err != nil {
		return classify("get", res, observed, err)
	}
	if live.GetUID() != observed.GetUID() {
		return fmt.Errorf("get %s: %w: it was replaced", describe(res, observed), ErrConflict)
	}
	patch, err = csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(a.manager), a.manager)
	if err != nil || patch == nil {
		return err // nil: no Update entry of the manager is left
	}
	if _, err := client.Patch(ctx, observed.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: a.manager}); err != nil {
		return classify("patch managedFields of", res, observed, err)
	}
	return nil
}
