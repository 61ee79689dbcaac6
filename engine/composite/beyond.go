package composite

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// Children beyond the parent's namespace. A CompositeController (the cluster-scoped kind)
// with a namespaced parent resource may return children that are cluster-scoped, or in
// another namespace than the parent's (metadata.namespace set to it): no opt-in is needed,
// the child resources and namespaces say it. Such a child carries no owner reference to the
// parent; the engine labels it with claim.ParentUIDLabel and ControllerLabel, claims it by
// those labels, holds its finalizer on the parent while the parent has such children and
// deletes them itself when the parent is deleted (reconcile.Cleaner). A
// NamespacedCompositeController is confined to its namespace: a cluster-scoped child
// resource is refused when it is configured, a child in another namespace when the hook
// returns it.

// ControllerLabel marks a CompositeController's children beyond their parent's namespace:
// its value is the controller's name (reconcile.LabelValue of its MarkName).
const ControllerLabel = "metascript.dev/composite-controller"

// beyondMark is the mark by which the parents of controller b claim their children beyond
// their namespace: nil when they have none, because the controller is confined to its
// namespace or its parents are cluster-scoped (and own any child by owner reference).
func beyondMark(b *reconcile.Built, parent resources.Resource) *claim.Mark {
	if b.Namespace != "" || !parent.Namespaced {
		return nil
	}
	return &claim.Mark{Key: ControllerLabel, Value: reconcile.LabelValue(b.MarkName()), Label: true}
}

// Cleans implements reconcile.Cleaner: the engine deletes a parent's children beyond its
// namespace itself, as the garbage collector cannot, and the children that wait for others
// (order.Carries), so that they go before what they wait for: the garbage collector, which
// deletes the rest once the parent is gone, keeps no order.
func (k *kind) Cleans(parent *unstructured.Unstructured, _ int, child *unstructured.Unstructured) bool {
	return k.beyond != nil && claim.Outside(parent.GetNamespace(), child.GetNamespace()) || order.Carries(child)
}

// Teardown implements reconcile.Cleaner: while a parent without a finalize hook is deleted,
// a child that another still waits for is kept until that one is gone (applyOrder).
func (k *kind) Teardown(d *reconcile.Gathered, out *reconcile.Outcome) {
	if order.Carried(d.Observed) {
		k.applyOrder(d, nil, out)
	}
}

var _ reconcile.Cleaner = (*kind)(nil)
