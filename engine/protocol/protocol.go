// Package protocol is the hook protocol every controller kind shares: how observed objects
// are put into a hook's request (ObjectMap, ObjectKey), how the parts of a response every kind
// has are read and validated (ParseCommon, Objects), the error that locates what is wrong with
// a response (InvalidResponseError), and how the JSON values hooks exchange compare
// (SameJSON). Requests and responses have the webhook protocol's JSON shape whether a hook is
// inline or a webhook. The package knows nothing of the reconcile loop that calls the hooks.
package protocol

import (
	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/resources"
)

// ChildRule is a resource the controller writes on behalf of its parents (children,
// attachments, outputs) and how existing objects of it are updated. A request's map of
// observed objects has one entry per rule; a response's objects are grouped by index of rule.
type ChildRule struct {
	resources.Resource
	Method v1alpha1.ChildUpdateMethod
	// Beyond, when set, lets the objects of the rule be beyond a namespaced parent's
	// namespace (cluster-scoped, or in another namespace): Objects labels each such object
	// with claim.ParentUIDLabel and this mark, which the parent claims it by (engine/claim).
	// Unset, a namespaced object must be in the parent's namespace.
	Beyond *claim.Mark
	// Confined, when set, names the controller kind that confines the rule's objects to the
	// parent's namespace (NamespacedCompositeController), for the refusal of another one.
	Confined string
}
