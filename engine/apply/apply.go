// Package apply writes a controller's children and lets the API server decide: server-side
// apply with one field manager per controller, deletes with UID preconditions, and
// adoption/release through ownerReferences patches guarded by uid and resourceVersion. It
// holds no cache and no state besides its client; the reconciler passes in what its informers
// observed.
//
// A child already as desired costs no request: see UpToDate for the exact rule, which rests on
// the AppliedHashAnnotation because the engine's cache drops managedFields.
//
// Every function treats its object arguments as read-only, so cached objects can be passed
// directly. An Applier is safe for concurrent use.
//
// Errors: ErrGone and ErrConflict mean the object vanished or changed since it was observed;
// the caller should requeue the parent and decide again from a fresher cache, not report a
// failure. ErrNotOwned means the child belongs to another controller (perhaps unknown to a
// lagging cache): do not repeat the write; requeue so that claiming decides again. ErrInvalid
// and ErrUnsupportedMethod mean the arguments were wrong and retrying the same call cannot
// succeed. Any other error comes from the API server or the transport (inspect it with
// k8s.io/apimachinery/pkg/api/errors) and is worth a retry with backoff, although a 422
// Invalid will recur until the desired object changes.
package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

var (
	// ErrGone: the object no longer exists (404). Requeue; there is nothing left to do to it.
	ErrGone = errors.New("object no longer exists")
	// ErrConflict: a precondition failed (409): the object was replaced (other UID), changed
	// (other resourceVersion), or another controller won the race to own it. Requeue.
	ErrConflict = errors.New("object was replaced or changed since it was observed")
	// ErrNotOwned: the child is controlled by another owner, so by the second law this
	// controller must not write it. Do not retry the write; requeue and claim again.
	ErrNotOwned = errors.New("object is controlled by another owner")
	// ErrInvalid: the desired or observed object cannot be written as given (no name,
	// a namespace that does not fit the resource's scope, a foreign ControllerRef). Do not
	// retry.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnsupportedMethod: the update method is not implemented. Do not retry.
	ErrUnsupportedMethod = errors.New("update method not supported")
)

// AppliedHashAnnotation holds the hash of the configuration this controller last applied to
// an object; see UpToDate.
const AppliedHashAnnotation = "metascript.dev/applied-hash"

// Resource is the API resource of a child: where requests go and what scope it has.
type Resource struct {
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// Applier writes the children of one controller under its own field manager.
type Applier struct {
	client  dynamic.Interface
	manager string
}

// New returns an Applier whose writes use the field manager FieldManager(controllerName).
func New(client dynamic.Interface, controllerName string) *Applier {
	return NewWithManager(client, FieldManager(controllerName))
}

// NewWithManager returns an Applier whose writes use the field manager given.
func NewWithManager(client dynamic.Interface, fieldManager string) *Applier {
	return &Applier{client: client, manager: fieldManager}
}

// FieldManager returns "metascript/<controllerName>", shortened with a hash suffix when it
// would exceed the API server's 128-character limit so that distinct names stay distinct.
func FieldManager(controllerName string) string {
	const prefix, limit = "metascript/", 128
	if len(prefix)+len(controllerName) <= limit {
		return prefix + controllerName
	}
	sum := sha256.Sum256([]byte(controllerName))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return prefix + controllerName[:limit-len(prefix)-len(suffix)] + suffix
}

// FieldManager is the field manager of every write this Applier makes.
func (a *Applier) FieldManager() string { return a.manager }

// resourceFor returns the client for obj's resource and namespace, refusing a namespace that
// does not fit the resource's scope.
func (a *Applier) resourceFor(res Resource, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	return resourceIn(a.client, res, obj)
}

// resourceIn is resourceFor on client.
func resourceIn(client dynamic.Interface, res Resource, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%w: %s has no metadata.name", ErrInvalid, describe(res, obj))
	}
	ns := obj.GetNamespace()
	switch {
	case res.Namespaced && ns == "":
		return nil, fmt.Errorf("%w: %s is namespaced but has no metadata.namespace", ErrInvalid, describe(res, obj))
	case !res.Namespaced && ns != "":
		return nil, fmt.Errorf("%w: %s is cluster-scoped but has metadata.namespace %q", ErrInvalid, describe(res, obj), ns)
	case res.Namespaced:
		return client.Resource(res.GVR).Namespace(ns), nil
	}
	return client.Resource(res.GVR), nil
}

// classify wraps an API error with ErrGone or ErrConflict when it is one, keeping the API
// error reachable through errors.As.
func classify(op string, res Resource, obj *unstructured.Unstructured, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: %w: %w", op, describe(res, obj), ErrGone, err)
	case apierrors.IsConflict(err), uidChanged(err):
		return fmt.Errorf("%s %s: %w: %w", op, describe(res, obj), ErrConflict, err)
	}
	return fmt.Errorf("%s %s: %w", op, describe(res, obj), err)
}

// uidChanged reports whether err is the API server refusing an apply whose metadata.uid
// precondition names an object that was replaced: it answers 422 "field is immutable" on
// metadata.uid rather than 409.
func uidChanged(err error) bool { return invalidField(err, "metadata.uid") }

// invalidField reports whether err is a 422 Invalid naming field among its causes.
func invalidField(err error, field string) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field {
			return true
		}
	}
	return false
}

// describe names obj for error messages: resource.group namespace/name.
func describe(res Resource, obj *unstructured.Unstructured) string {
	gr := res.GVR.GroupResource().String()
	if ns := obj.GetNamespace(); ns != "" {
		return gr + " " + ns + "/" + obj.GetName()
	}
	return gr + " " + obj.GetName()
}

// controllerRef is what the checks and messages need of an object's ControllerRef.
type controllerRef struct {
	Kind, Name string
	UID        types.UID
}

// controllerOf returns obj's ControllerRef as metav1.GetControllerOf finds it, read in place
// rather than through a copy of every owner reference: every sync checks every child. ok is
// false when obj has none.
func controllerOf(obj *unstructured.Unstructured) (ref controllerRef, ok bool) {
	meta, _ := obj.Object["metadata"].(map[string]any)
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		if _, isMap := r.(map[string]any); !isMap {
			return ref, false // GetOwnerReferences reads no reference of such a list
		}
	}
	for _, r := range refs {
		m := r.(map[string]any)
		if isController, _ := m["controller"].(bool); isController {
			ref.Kind, _ = m["kind"].(string)
			ref.Name, _ = m["name"].(string)
			uid, _ := m["uid"].(string)
			ref.UID = types.UID(uid)
			return ref, true
		}
	}
	return ref, false
}
