package apply

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Adopt makes owner the ControllerRef of the orphan observed (controller and
// blockOwnerDeletion true; a plain owner reference with owner's UID is replaced, other owner
// references are kept) and returns the object the API server stored. The JSON merge patch
// carries the full new ownerReferences list with observed's uid and resourceVersion as
// preconditions, so that of several parents racing to adopt one orphan exactly one wins and
// the others get ErrConflict; a concurrent edit or a replaced object also yields ErrConflict
// instead of being clobbered. When observed already has owner as its ControllerRef no request
// is sent and observed is returned.
//
// The caller decides whether to adopt (engine/claim); Adopt does not look at labels.
//
// Errors: ErrConflict (lost a race, object changed or replaced: requeue and claim again),
// ErrGone (deleted: requeue), ErrNotOwned (observed already has another controller: claim
// again, do not retry), ErrInvalid (do not retry); anything else is worth a retry.
func (a *Applier) Adopt(ctx context.Context, res Resource, owner metav1.OwnerReference, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if owner.UID == "" {
		return nil, fmt.Errorf("%w: owner reference has no uid", ErrInvalid)
	}
	if ref, ok := controllerOf(observed); ok {
		if ref.UID == owner.UID {
			return observed, nil
		}
		return nil, fmt.Errorf("adopt %s: %w: %s %s", describe(res, observed), ErrNotOwned, ref.Kind, ref.Name)
	}
	yes := true
	owner.Controller, owner.BlockOwnerDeletion = &yes, &yes
	refs := []metav1.OwnerReference{}
	for _, ref := range observed.GetOwnerReferences() {
		if ref.UID != owner.UID {
			refs = append(refs, ref)
		}
	}
	return a.patchOwners(ctx, res, observed, append(refs, owner))
}

// Release removes every owner reference with ownerUID from observed and returns the object
// the API server stored, so that the child becomes an orphan another parent may adopt. The
// patch has the same preconditions as Adopt's. When observed holds no reference to ownerUID no
// request is sent and observed is returned.
//
// Errors: ErrConflict (changed or replaced since observed: requeue), ErrGone (deleted: nothing
// left to release), ErrInvalid (do not retry); anything else is worth a retry.
func (a *Applier) Release(ctx context.Context, res Resource, ownerUID types.UID, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	current := observed.GetOwnerReferences()
	refs := []metav1.OwnerReference{}
	for _, ref := range current {
		if ref.UID != ownerUID {
			refs = append(refs, ref)
		}
	}
	if len(refs) == len(current) {
		return observed, nil
	}
	return a.patchOwners(ctx, res, observed, refs)
}

// ownersPatch is a JSON merge patch replacing ownerReferences; uid and resourceVersion are
// checked by the API server, not changed.
type ownersPatch struct {
	Metadata struct {
		UID             types.UID                `json:"uid"`
		ResourceVersion string                   `json:"resourceVersion"`
		OwnerReferences *[]metav1.OwnerReference `json:"ownerReferences"` // null removes the field
	} `json:"metadata"`
}

func (a *Applier) patchOwners(ctx context.Context, res Resource, observed *unstructured.Unstructured, refs []metav1.OwnerReference) (*unstructured.Unstructured, error) {
	client, err := a.resourceFor(res, observed)
	if err != nil {
		return nil, err
	}
	var p ownersPatch
	p.Metadata.UID = observed.GetUID()
	p.Metadata.ResourceVersion = observed.GetResourceVersion()
	if p.Metadata.UID == "" || p.Metadata.ResourceVersion == "" {
		return nil, fmt.Errorf("%w: observed %s needs metadata.uid and metadata.resourceVersion", ErrInvalid, describe(res, observed))
	}
	if len(refs) > 0 {
		p.Metadata.OwnerReferences = &refs
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	out, err := client.Patch(ctx, observed.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: a.manager})
	if err != nil {
		return nil, classify("patch ownerReferences of", res, observed, err)
	}
	return out, nil
}
