package composite

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
)

// chain is a sync answer of three ConfigMaps: b waits for a to exist, c for b to be Ready.
func chain(finalized bool, names ...string) map[string]any {
	children := []any{}
	for _, n := range names {
		children = append(children, cm(n, nil))
	}
	key := func(n string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": n}
	}
	resp := map[string]any{"children": children}
	if len(names) == 3 {
		resp["order"] = []any{
			map[string]any{"child": key("b"), "after": []any{map[string]any{"child": key("a")}}},
			map[string]any{"child": key("c"), "after": []any{map[string]any{"child": key("b"),
				"ready": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}}},
		}
	}
	if finalized {
		resp["finalized"] = true
	}
	return resp
}

// observedCM is ConfigMap name as the cache holds it, waiting for after (its annotation as
// the engine writes it), and Ready when ready.
func observedCM(name string, ready bool, after ...string) *unstructured.Unstructured {
	o := cached("v1", "ConfigMap", "ns", name, nil)
	if len(after) > 0 {
		var keys []string
		for _, a := range after {
			keys = append(keys, `{"apiVersion":"v1","kind":"ConfigMap","namespace":"ns","name":"`+a+`"}`)
		}
		o.SetAnnotations(map[string]string{order.AfterAnnotation: "[" + strings.Join(keys, ",") + "]"})
	}
	if ready {
		o.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	}
	return o
}

func TestDecideInOrder(t *testing.T) {
	k := &kind{rules: []protocol.ChildRule{configMaps}, generate: true}
	for _, tc := range []struct {
		name       string
		resp       map[string]any
		observed   []*unstructured.Unstructured
		finalizing bool
		wasWaiting bool     // the parent carries ChildrenWaiting=True
		write      []string // names of the children written, in order
		untouched  []string // names kept from deletion
		finalized  bool
		condition  string // status/reason: message
	}{
		{name: "nothing observed: the first wave", resp: chain(false, "a", "b", "c"), write: []string{"a"},
			condition: "True/Waiting: 2 to create, 0 to delete: ConfigMap ns/b waits for ConfigMap ns/a (it does not exist yet); " +
				"ConfigMap ns/c waits for ConfigMap ns/b (it does not exist yet)"},
		{name: "a exists", resp: chain(false, "a", "b", "c"), observed: []*unstructured.Unstructured{observedCM("a", false)},
			write:     []string{"a", "b"},
			condition: "True/Waiting: 1 to create, 0 to delete: ConfigMap ns/c waits for ConfigMap ns/b (it does not exist yet)"},
		{name: "b exists, not ready", resp: chain(false, "a", "b", "c"),
			observed: []*unstructured.Unstructured{observedCM("a", false), observedCM("b", false, "a")}, write: []string{"a", "b"},
			condition: "True/Waiting: 1 to create, 0 to delete: ConfigMap ns/c waits for ConfigMap ns/b (it has no condition Ready)"},
		{name: "b ready", resp: chain(false, "a", "b", "c"),
			observed: []*unstructured.Unstructured{observedCM("a", false), observedCM("b", true, "a")}, write: []string{"a", "b", "c"},
			condition: "False/NoneWaiting: every child the hook returns exists or is created, and no deletion waits"},
		{name: "finalize: the last wave goes first", resp: chain(true), finalizing: true,
			observed:  []*unstructured.Unstructured{observedCM("a", false), observedCM("b", true, "a"), observedCM("c", false, "b")},
			untouched: []string{"a", "b"},
			condition: "True/Waiting: 0 to create, 2 to delete: ConfigMap ns/a is deleted once ConfigMap ns/b is gone; " +
				"ConfigMap ns/b is deleted once ConfigMap ns/c is gone"},
		{name: "finalize: the first wave last, and finalized", resp: chain(true), finalizing: true,
			observed: []*unstructured.Unstructured{observedCM("a", false)}, finalized: true, wasWaiting: true,
			condition: "False/NoneWaiting: every child the hook returns exists or is created, and no deletion waits"},
		{name: "children the answer keeps hold nothing", resp: chain(false, "a"),
			observed: []*unstructured.Unstructured{observedCM("a", false), observedCM("b", true, "a")}, write: []string{"a"},
			condition: "False/NoneWaiting: every child the hook returns exists or is created, and no deletion waits"},
		{name: "no order anywhere: no condition", resp: chain(false, "a", "b"), observed: []*unstructured.Unstructured{observedCM("a", false)},
			write: []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := parentIn("ns")
			if tc.wasWaiting {
				parent.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": ChildrenWaitingCondition, "status": "True"}}}
			}
			d := &reconcile.Gathered{Parent: parent, Finalizing: tc.finalizing, Hook: "sync",
				Observed: map[int][]*unstructured.Unstructured{0: tc.observed}}
			a := &syncAsked{k: k, d: d}
			out, err := a.Decide([]reconcile.Answer{{Response: tc.resp}})
			if err != nil {
				t.Fatal(err)
			}
			var write, untouched []string
			for _, c := range out.Children[0] {
				write = append(write, c.GetName())
			}
			for o := range out.Untouched {
				untouched = append(untouched, o.GetName())
			}
			slices.Sort(untouched)
			if !slices.Equal(write, tc.write) || !slices.Equal(untouched, tc.untouched) {
				t.Errorf("writes %v and keeps %v; want %v and %v", write, untouched, tc.write, tc.untouched)
			}
			if out.Finalized != tc.finalized {
				t.Errorf("finalized %v, want %v", out.Finalized, tc.finalized)
			}
			var cond string
			for _, c := range out.Conditions {
				if c["type"] == ChildrenWaitingCondition {
					cond = c["status"].(string) + "/" + c["reason"].(string) + ": " + c["message"].(string)
				}
			}
			if cond != tc.condition {
				t.Errorf("condition %q\n want     %q", cond, tc.condition)
			}
			for _, c := range out.Children[0] {
				if got, want := c.GetAnnotations()[order.AfterAnnotation] != "", c.GetName() != "a" && tc.resp["order"] != nil; got != want {
					t.Errorf("%s records an order: %v, want %v", c.GetName(), got, want)
				}
			}
		})
	}
}

// TestDecideRefusesACycle: a cycle is an invalid answer, naming its members; nothing is
// decided.
func TestDecideRefusesACycle(t *testing.T) {
	k := &kind{rules: []protocol.ChildRule{configMaps}, generate: true}
	resp := chain(false, "a", "b", "c")
	key := func(n string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": n}
	}
	resp["order"] = append(resp["order"].([]any), map[string]any{"child": key("a"), "after": []any{map[string]any{"child": key("c")}}})
	d := &reconcile.Gathered{Parent: parentIn("ns"), Hook: "sync", Observed: map[int][]*unstructured.Unstructured{}}
	_, err := (&syncAsked{k: k, d: d}).Decide([]reconcile.Answer{{Response: resp}})
	var invalid *protocol.InvalidResponseError
	if !errors.As(err, &invalid) {
		t.Fatalf("Decide = %v, want an invalid answer", err)
	}
	if want := "order[0]: a cycle: ConfigMap ns/b waits for ConfigMap ns/a waits for ConfigMap ns/c waits for ConfigMap ns/b"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}
