package reconcile

import (
	"iter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The one condition helper: how status.conditions is read and how a condition is put into
// it. Conditions are JSON objects with type, status, reason, message, observedGeneration and
// lastTransitionTime, as metav1.Condition has them.

// Conditions yields the entries of obj's status.conditions that are objects, in order. They
// are obj's own: read-only.
func Conditions(obj *unstructured.Unstructured) iter.Seq[map[string]any] {
	return func(yield func(map[string]any) bool) {
		for _, c := range conditionList(obj) {
			if m, ok := c.(map[string]any); ok && !yield(m) {
				return
			}
		}
	}
}

// conditionList is obj's status.conditions as stored: nil when absent or not a list.
func conditionList(obj *unstructured.Unstructured) []any {
	list, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "conditions")
	items, _ := list.([]any)
	return items
}

// FindCondition returns obj's condition of type typ, or nil.
func FindCondition(obj *unstructured.Unstructured, typ string) map[string]any {
	for c := range Conditions(obj) {
		if c["type"] == typ {
			return c
		}
	}
	return nil
}

// stampCondition completes cond for parent: observedGeneration, and lastTransitionTime,
// which is the parent's for cond's type while its status stays the same and now when it
// changes, so that writing an unchanged condition again changes nothing.
func stampCondition(parent *unstructured.Unstructured, cond map[string]any, now time.Time) {
	cond["observedGeneration"] = parent.GetGeneration()
	cond["lastTransitionTime"] = metav1.NewTime(now).UTC().Format(time.RFC3339)
	if cur := FindCondition(parent, cond["type"].(string)); cur != nil && cur["status"] == cond["status"] {
		if t, ok := cur["lastTransitionTime"].(string); ok {
			cond["lastTransitionTime"] = t
		}
	}
}

// replaceCondition returns a new list: list with cond in place of the entry of its type, or
// appended when there is none. list is not modified.
func replaceCondition(list []any, cond map[string]any) []any {
	out := make([]any, 0, len(list)+1)
	replaced := false
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == cond["type"] {
			if !replaced {
				out = append(out, cond)
				replaced = true
			}
			continue
		}
		out = append(out, c)
	}
	if !replaced {
		out = append(out, cond)
	}
	return out
}

// statusWithConditions returns into, an empty map, holding status (nil is empty) with each
// of conds stamped for parent and put into its conditions; and, when status does not set
// the engine's Synced condition itself, the parent's current one kept, so that replacing the
// whole status keeps it. status is not modified.
func statusWithConditions(into map[string]any, parent *unstructured.Unstructured, status map[string]any, conds []map[string]any, now time.Time) map[string]any {
	out := into
	for k, v := range status {
		out[k] = v
	}
	raw, present := out["conditions"]
	list, isList := raw.([]any)
	foreign := present && raw != nil && !isList // not a list: the hook's own business
	if len(conds) > 0 && foreign {
		list, foreign = nil, false
	}
	for _, c := range conds {
		stampCondition(parent, c, now)
		list = replaceCondition(list, c)
	}
	if synced := FindCondition(parent, SyncedCondition); synced != nil && !foreign && !hasCondition(list, SyncedCondition) {
		list = append(append(make([]any, 0, len(list)+1), list...), synced)
	}
	if list != nil {
		out["conditions"] = list
	}
	return out
}

func hasCondition(list []any, typ string) bool {
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return true
		}
	}
	return false
}
