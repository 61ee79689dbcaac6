package composite

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// Ask implements reconcile.Kind: the reference's sync/finalize request and one hook call,
// whose response of status, children, resyncAfterSeconds and finalized is the outcome; with
// rolling child rules, one call per live revision (askRolling).
func (k *kind) Ask(d *reconcile.Gathered) (reconcile.Asked, error) {
	if k.rolling != nil && !d.Finalizing {
		return k.askRolling(d)
	}
	return &syncAsked{k: k, d: d, call: [1]reconcile.Call{k.call(d, d.Parent)}}, nil
}

// syncAsked is a sync or finalize decision waiting for its one answer.
type syncAsked struct {
	k    *kind
	d    *reconcile.Gathered
	call [1]reconcile.Call
}

func (a *syncAsked) Calls() []reconcile.Call { return a.call[:] }

func (a *syncAsked) Decide(answers []reconcile.Answer) (*reconcile.Outcome, error) {
	parsed, err := a.k.parse(a.d, answers[0].Response)
	if err != nil {
		return nil, err
	}
	out := &reconcile.Outcome{Children: parsed.children, Status: parsed.Status, ResyncAfter: parsed.ResyncAfter,
		Finalized: parsed.Finalized, Events: parsed.Events}
	a.k.applyOrder(a.d, parsed.order, out)
	return out, nil
}

// call is the hook call d names for the parent seen as p (d.Parent, or d.Parent as it was
// in an older revision).
func (k *kind) call(d *reconcile.Gathered, p *unstructured.Unstructured) reconcile.Call {
	return reconcile.Call{Hook: d.Hook, Request: syncRequest(k.controller, p, k.rules, d.Observed, d.Related, k.hookVersion, d.Finalizing)}
}

// parse validates an answer against d.Parent's selector.
func (k *kind) parse(d *reconcile.Gathered, resp map[string]any) (*syncResponse, error) {
	sel, extraLabels, err := k.selectorOf(d.Parent)
	if err != nil {
		return nil, err
	}
	return parseResponse(resp, d.Parent, k.rules, sel, extraLabels)
}

// request is Descriptor.Request: the sync or finalize request of the controller b, every
// child rule as a plain rule.
func request(b *reconcile.Built, d *reconcile.Gathered) map[string]any {
	var rules []protocol.ChildRule
	for _, res := range childResources(b) {
		rules = append(rules, protocol.ChildRule{Resource: res})
	}
	return syncRequest(b.Object, d.Parent, rules, d.Observed, d.Related, reconcile.HookVersion(b.Declared.Hooks["sync"]), d.Finalizing)
}

// childResources are the resolved resources of b's spec.childResources, in order.
func childResources(b *reconcile.Built) []resources.Resource {
	cc := b.Typed.(*v1alpha1.CompositeController)
	return b.Resources[1 : 1+len(cc.Spec.ChildResources)]
}

// syncRequest builds the sync/finalize hook request of the reference: controller, parent,
// children (one entry per child rule, even when empty), related (what the customize hook's
// rules select) and finalizing.
func syncRequest(controller map[string]any, parent *unstructured.Unstructured, rules []protocol.ChildRule,
	observed map[int][]*unstructured.Unstructured, related map[string]any, version v1alpha1.HookVersion, finalizing bool) map[string]any {
	return map[string]any{
		"controller": controller,
		"parent":     parent.Object,
		"children":   protocol.ObjectMap(parent, rules, observed, version),
		"related":    related,
		"finalizing": finalizing,
	}
}

// requestFields and responseFields are the top-level fields of a sync or finalize request
// and response.
var (
	requestFields  = []string{"controller", "parent", "children", "related", "finalizing"}
	responseFields = []string{"status", "children", "resyncAfterSeconds", "finalized", "events", order.Field}
)

// syncResponse is a validated hook response.
type syncResponse struct {
	protocol.Common
	// children are the desired children with namespace defaulted, grouped by rule index.
	children map[int][]*unstructured.Unstructured
	// order is what children wait for; nil when the answer gives no order.
	order *order.Graph
}

// parseResponse validates a whole response before anything is written: every child's
// apiVersion/kind is a declared child resource, it has a legal name, a legal namespace for
// its scope, and labels matching the parent's selector (unless it is beyond the parent's
// namespace, claimed by label); no child appears twice; the order, when given, names
// children of the answer and has no cycle (order.Parse).
func parseResponse(resp map[string]any, parent *unstructured.Unstructured, rules []protocol.ChildRule,
	selector labels.Selector, extraLabels map[string]string) (*syncResponse, error) {
	common, err := protocol.ParseCommon(resp, responseFields...)
	if err != nil {
		return nil, err
	}
	children, err := protocol.Objects(resp, "children", parent, rules, "childResources", nil,
		func(path string, rule int, child *unstructured.Unstructured) error {
			if len(extraLabels) > 0 {
				protocol.SetStrings(child, "labels", extraLabels)
			}
			if rules[rule].Beyond != nil && claim.Outside(parent.GetNamespace(), child.GetNamespace()) {
				return nil // claimed by label, not by selector
			}
			if !selector.Matches(claim.LabelsOf(child)) {
				return protocol.Invalid(path+".metadata.labels", "%v do not match the parent's selector %q (the child would be orphaned at once)",
					child.GetLabels(), selector.String())
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	var g *order.Graph
	if resp[order.Field] != nil {
		var all []*unstructured.Unstructured
		for _, list := range children {
			all = append(all, list...)
		}
		if g, err = order.Parse(resp, all, parent.GetNamespace()); err != nil {
			return nil, err
		}
	}
	return &syncResponse{Common: common, children: children, order: g}, nil
}
