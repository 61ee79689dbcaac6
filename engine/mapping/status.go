package mapping

import (
	"slices"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/reconcile"
)

// MappedCondition is the condition type of a parent's status saying whether every input's
// last map call succeeded, naming the map keys that failed and why.
const MappedCondition = "Mapped"

// status is the aggregated status of a parent, as the design has it:
//
//	inputs:  {<plural>: {total: N}}                  per input resource
//	outputs: {<plural>: {total: M, <condition>: n}}  per output resource; <condition> is each
//	                                                 condition type found True on outputs, its
//	                                                 first letter in lower case (Ready → ready)
//
// and the Mapped condition (mappedCondition). Outputs counted are those the parent keeps
// after this reconcile: desired or untouched. Conditions are read from the outputs as
// observed.
func (k *kind) status(inputs []input, observed map[int][]*unstructured.Unstructured, out *reconcile.Outcome) map[string]any {
	ins := map[string]any{}
	for i, res := range k.inputs {
		n := int64(0)
		for _, in := range inputs {
			if in.res == i {
				n++
			}
		}
		ins[res.GVR.Resource] = map[string]any{"total": n}
	}
	outs := map[string]any{}
	for i, rule := range k.rules {
		counts := map[string]any{}
		byName := map[string]*unstructured.Unstructured{}
		for _, o := range observed[i] {
			byName[o.GetNamespace()+"/"+o.GetName()] = o
		}
		total := int64(0)
		count := func(o *unstructured.Unstructured) {
			total++
			if o != nil {
				for _, typ := range trueConditions(o) {
					n, _ := counts[typ].(int64)
					counts[typ] = n + 1
				}
			}
		}
		for _, o := range observed[i] {
			if out.Untouched[o] {
				count(o)
			}
		}
		for _, d := range out.Children[i] {
			count(byName[d.GetNamespace()+"/"+d.GetName()])
		}
		counts["total"] = total
		outs[rule.GVR.Resource] = counts
	}
	return map[string]any{"inputs": ins, "outputs": outs}
}

// mappedCondition says whether every input's last map call succeeded, naming the map keys
// that failed and why, and those a webhook's Retry-After deferred and until when (reason
// MapDeferred when no call failed otherwise).
func mappedCondition(failed, deferred []string) map[string]any {
	cond := map[string]any{"type": MappedCondition, "status": string(metav1.ConditionTrue), "reason": "Mapped",
		"message": "every input's last map call succeeded"}
	if len(failed)+len(deferred) > 0 {
		cond["status"], cond["reason"] = string(metav1.ConditionFalse), "MapFailed"
		if len(failed) == 0 {
			cond["reason"] = "MapDeferred"
		}
		msg := strings.Join(slices.Concat(failed, deferred), "; ")
		if len(msg) > 4096 {
			msg = msg[:4093] + "..."
		}
		cond["message"] = msg
	}
	return cond
}

// trueConditions lists the condition types an object's status.conditions has True, each as
// a status key: its first letter in lower case.
func trueConditions(o *unstructured.Unstructured) []string {
	var out []string
	for c := range reconcile.Conditions(o) {
		if c["status"] != "True" {
			continue
		}
		if typ, ok := c["type"].(string); ok && typ != "" {
			r := []rune(typ)
			r[0] = unicode.ToLower(r[0])
			if key := string(r); key != "total" {
				out = append(out, key)
			}
		}
	}
	return out
}
