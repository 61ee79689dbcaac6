package composite

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/engine/reconcile"
)

// ChildrenWaitingCondition is the condition type a parent whose hook answers with an order
// carries in its status: True while children wait to be created (for what they wait for to
// be ready) or to be deleted (for the children that wait for them to go first), naming each
// and why; False when none waits.
const ChildrenWaitingCondition = "ChildrenWaiting"

// waitingListed bounds the children the condition's message names.
const waitingListed = 10

// applyOrder carries out g, the order of the answer out was made from (nil: none), over the
// children d observed: a child not observed yet waits while anything it waits for is not
// ready, and is left out of out.Children; every written child records what it waits for;
// a child leaving is kept (out.Untouched) while an observed child that waits for it remains,
// and a finalize answer's finalized is not honoured until none is kept. It adds the
// ChildrenWaiting condition to out when the answer has an order, a child kept records one,
// or the parent carries the condition already.
func (k *kind) applyOrder(d *reconcile.Gathered, g *order.Graph, out *reconcile.Outcome) {
	carried := order.Carried(d.Observed)
	present := reconcile.FindCondition(d.Parent, ChildrenWaitingCondition) != nil
	if g == nil && !carried && !present {
		return // the common case: nothing to order, nothing to report
	}
	rules := slices.Sorted(maps.Keys(out.Children))
	var waiting []order.Waiting
	if g != nil {
		observed := map[order.Key]*unstructured.Unstructured{}
		for _, list := range d.Observed {
			for _, o := range list {
				observed[order.KeyOf(o)] = o
			}
		}
		for _, i := range rules {
			write, w := g.Gate(out.Children[i], observed)
			for _, c := range write {
				g.Annotate(c)
			}
			out.Children[i], waiting = write, append(waiting, w...)
		}
	}
	var held []order.Held
	if carried {
		held = k.holdDeletions(d, out)
	}
	if len(held) > 0 {
		if out.Untouched == nil {
			out.Untouched = map[*unstructured.Unstructured]bool{}
		}
		for _, h := range held {
			out.Untouched[h.Child] = true
		}
		out.Finalized = false // the engine is not done deleting: the finalizer stays
	}
	if out.Status == nil && len(out.Conditions) == 0 {
		// No status in the answer leaves the status alone: the condition joins it.
		out.Status, _, _ = unstructured.NestedMap(d.Parent.Object, "status")
	}
	out.Conditions = append(out.Conditions, waitingCondition(waiting, held))
}

// holdDeletions decides which of the observed children out neither keeps nor leaves
// untouched wait to be deleted (order.HoldDeletions), in a stable order.
func (k *kind) holdDeletions(d *reconcile.Gathered, out *reconcile.Outcome) []order.Held {
	kept := map[order.Key]bool{}
	for _, list := range out.Children {
		for _, c := range list {
			kept[order.KeyOf(c)] = true
		}
	}
	var leaving, staying []*unstructured.Unstructured
	for _, i := range slices.Sorted(maps.Keys(d.Observed)) {
		for _, o := range d.Observed[i] {
			if kept[order.KeyOf(o)] {
				continue
			}
			staying = append(staying, o)
			if !out.Untouched[o] {
				leaving = append(leaving, o)
			}
		}
	}
	held := order.HoldDeletions(leaving, staying)
	slices.SortFunc(held, func(a, b order.Held) int {
		return strings.Compare(order.KeyOf(a.Child).String(), order.KeyOf(b.Child).String())
	})
	return held
}

// waitingCondition says which children wait and for what.
func waitingCondition(waiting []order.Waiting, held []order.Held) map[string]any {
	if len(waiting) == 0 && len(held) == 0 {
		return map[string]any{"type": ChildrenWaitingCondition, "status": string(metav1.ConditionFalse), "reason": "NoneWaiting",
			"message": "every child the hook returns exists or is created, and no deletion waits"}
	}
	var parts []string
	for _, w := range waiting {
		var on []string
		for _, u := range w.Unmet {
			on = append(on, fmt.Sprintf("%s (%s)", u.Child, u.Why))
		}
		parts = append(parts, fmt.Sprintf("%s waits for %s", w.Child, strings.Join(on, ", ")))
	}
	for _, h := range held {
		var by []string
		for _, k := range h.Waiters {
			by = append(by, k.String())
		}
		parts = append(parts, fmt.Sprintf("%s is deleted once %s %s gone", order.KeyOf(h.Child), strings.Join(by, ", "),
			map[bool]string{true: "is", false: "are"}[len(by) == 1]))
	}
	if len(parts) > waitingListed {
		parts = append(parts[:waitingListed], fmt.Sprintf("and %d more", len(parts)-waitingListed))
	}
	return map[string]any{"type": ChildrenWaitingCondition, "status": string(metav1.ConditionTrue), "reason": "Waiting",
		"message": fmt.Sprintf("%d to create, %d to delete: %s", len(waiting), len(held), strings.Join(parts, "; "))}
}
