package mapping

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

var (
	copiesRule = protocol.ChildRule{Resource: resources.Resource{
		GVR: schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "copies"},
		GVK: schema.GroupVersionKind{Group: "test.metascript.dev", Version: "v1", Kind: "Copy"}, Namespaced: true}}
	configMapsRes = resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
)

func testKind() *kind {
	return &kind{rules: []protocol.ChildRule{copiesRule}, inputs: []resources.Resource{configMapsRes},
		mark: &claim.Mark{Key: ControllerLabel, Value: "m", Label: true}}
}

func object(name, rv string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "test.metascript.dev/v1", "kind": "Copy"}}
	o.SetName(name)
	o.SetNamespace("ns")
	o.SetResourceVersion(rv)
	return o
}

func parentIn(ns string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{}}
	p.SetName("p")
	p.SetNamespace(ns)
	p.SetUID("puid")
	return p
}

func TestMemoValid(t *testing.T) {
	now := time.Unix(1000, 0)
	m := &memo{inputVersion: "7", parent: "1/x", outputs: map[string]string{"ns/a": "10", "ns/b": "11"}}
	outs := []*unstructured.Unstructured{object("a", "10"), object("b", "11")}
	for _, tc := range []struct {
		name    string
		m       *memo
		input   string
		parent  string
		outputs []*unstructured.Unstructured
		want    bool
	}{
		{"unchanged", m, "7", "1/x", outs, true},
		{"no memo", nil, "7", "1/x", outs, false},
		{"input changed", m, "8", "1/x", outs, false},
		{"parent changed", m, "7", "2/x", outs, false},
		{"an output changed", m, "7", "1/x", []*unstructured.Unstructured{object("a", "10"), object("b", "12")}, false},
		{"an output gone", m, "7", "1/x", outs[:1], false},
		{"an output renamed", m, "7", "1/x", []*unstructured.Unstructured{object("a", "10"), object("c", "11")}, false},
		{"expired", &memo{inputVersion: "7", parent: "1/x", outputs: m.outputs, expires: now}, "7", "1/x", outs, false},
		{"not yet expired", &memo{inputVersion: "7", parent: "1/x", outputs: m.outputs, expires: now.Add(time.Second)}, "7", "1/x", outs, true},
		// A Retry-After deferral withholds the call until it expires, whatever changed.
		{"deferred, input changed", &memo{deferred: true, expires: now.Add(time.Second)}, "8", "2/x", outs[:1], true},
		{"deferral over", &memo{deferred: true, expires: now}, "7", "1/x", outs, false},
	} {
		if got := tc.m.valid(tc.input, tc.parent, tc.outputs, now); got != tc.want {
			t.Errorf("%s: valid = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParentFingerprint(t *testing.T) {
	p := parentIn("ns")
	p.SetGeneration(3)
	base := protocol.ParentFingerprint(p)
	status := p.DeepCopy()
	status.Object["status"] = map[string]any{"x": int64(1)}
	status.SetResourceVersion("99")
	if protocol.ParentFingerprint(status) != base {
		t.Error("a status change changed the fingerprint")
	}
	for name, edit := range map[string]func(*unstructured.Unstructured){
		"generation":  func(o *unstructured.Unstructured) { o.SetGeneration(4) },
		"labels":      func(o *unstructured.Unstructured) { o.SetLabels(map[string]string{"a": "b"}) },
		"annotations": func(o *unstructured.Unstructured) { o.SetAnnotations(map[string]string{"a": "b"}) },
	} {
		c := p.DeepCopy()
		edit(c)
		if protocol.ParentFingerprint(c) == base {
			t.Errorf("a change of %s left the fingerprint as it was", name)
		}
	}
}

func TestParseMap(t *testing.T) {
	k := testKind()
	out := func(name string, labels map[string]any) map[string]any {
		md := map[string]any{"name": name}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"apiVersion": "test.metascript.dev/v1", "kind": "Copy", "metadata": md}
	}
	got, resync, events, err := k.parseMap(map[string]any{"outputs": []any{out("a", nil)}, "resyncAfterSeconds": int64(5),
		"events": []any{map[string]any{"reason": "Mapped", "message": "input a mapped"}}}, parentIn("ns"), "key1")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0] != (protocol.Event{Type: "Normal", Reason: "Mapped", Message: "input a mapped"}) {
		t.Fatalf("events %v", events)
	}
	o := got[0][0]
	if o.GetNamespace() != "ns" || o.GetLabels()[MapKeyLabel] != "key1" || o.GetLabels()[ControllerLabel] != "m" || resync != 5*time.Second {
		t.Fatalf("output %v, resync %v", o.Object, resync)
	}
	for _, tc := range []struct {
		resp map[string]any
		want string
	}{
		{map[string]any{"children": []any{}}, "children: unknown field (expected outputs, resyncAfterSeconds, events)"},
		{map[string]any{"outputs": []any{out("a", map[string]any{MapKeyLabel: "other"})}}, `"other" is another input's map key`},
		{map[string]any{"outputs": []any{out("a", map[string]any{ControllerLabel: "x"})}}, `"x" names another controller`},
		{map[string]any{"outputs": []any{map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}}}},
			"outputs[0]: v1 Secret is not among the controller's outputResources"},
		{map[string]any{"status": map[string]any{}}, "status: unknown field"},
	} {
		if _, _, _, err := k.parseMap(tc.resp, parentIn("ns"), "key1"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseMap(%v) = %v, want an error containing %q", tc.resp, err, tc.want)
		}
	}
}

func TestParseTombstone(t *testing.T) {
	k := testKind()
	g := &group{byRule: map[int][]*unstructured.Unstructured{0: {object("a", "1"), object("b", "2")}}}
	ref := func(name string) map[string]any {
		return map[string]any{"apiVersion": "test.metascript.dev/v1", "kind": "Copy", "metadata": map[string]any{"name": name}}
	}
	keep, _, _, err := k.parseTombstone(map[string]any{"outputs": []any{ref("b")}}, parentIn("ns"), g)
	if err != nil || len(keep) != 1 || keep[0] != g.byRule[0][1] {
		t.Fatalf("keep = %v, err %v", keep, err)
	}
	if _, _, _, err := k.parseTombstone(map[string]any{"outputs": []any{ref("c")}}, parentIn("ns"), g); err == nil ||
		!strings.Contains(err.Error(), "not an output of this map key") {
		t.Fatalf("keeping an unknown output: %v", err)
	}
}

func TestStatus(t *testing.T) {
	k := testKind()
	ready := func(o *unstructured.Unstructured, typ, status string) *unstructured.Unstructured {
		o.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": typ, "status": status}}}
		return o
	}
	a, b, c := ready(object("a", "1"), "Ready", "True"), ready(object("b", "1"), "Ready", "False"), ready(object("c", "1"), "Total", "True")
	gone := ready(object("gone", "1"), "Ready", "True")
	observed := map[int][]*unstructured.Unstructured{0: {a, b, c, gone}}
	out := &reconcile.Outcome{
		Untouched: map[*unstructured.Unstructured]bool{a: true, c: true},
		Children:  map[int][]*unstructured.Unstructured{0: {object("b", ""), object("new", "")}},
	}
	inputs := []input{{res: 0}, {res: 0}}
	s := k.status(inputs, observed, out)
	outs := s["outputs"].(map[string]any)["copies"].(map[string]any)
	if outs["total"] != int64(4) || outs["ready"] != int64(1) {
		t.Fatalf("outputs = %v: want total 4 (a, c untouched; b, new desired; gone deleted), ready 1", outs)
	}
	if ins := s["inputs"].(map[string]any)["configmaps"].(map[string]any); ins["total"] != int64(2) {
		t.Fatalf("inputs = %v", ins)
	}
	cond := mappedCondition([]string{"k1 (ConfigMap ns/x): boom"}, nil)
	if cond["type"] != MappedCondition || cond["status"] != "False" || !strings.Contains(cond["message"].(string), "k1 (ConfigMap ns/x): boom") {
		t.Fatalf("condition = %v", cond)
	}
	deferred := []string{"k2 (ConfigMap ns/y): called again in 2s"}
	if cond := mappedCondition(nil, deferred); cond["status"] != "False" || cond["reason"] != "MapDeferred" || cond["message"] != deferred[0] {
		t.Fatalf("condition of a deferred input = %v", cond)
	}
	if cond := mappedCondition([]string{"k1: boom"}, deferred); cond["reason"] != "MapFailed" || cond["message"] != "k1: boom; "+deferred[0] {
		t.Fatalf("condition of a failed and a deferred input = %v", cond)
	}
}

func TestMarkValue(t *testing.T) {
	if MarkValue("short") != "short" {
		t.Error("short name changed")
	}
	long := strings.Repeat("x", 80)
	if v := MarkValue(long); len(v) != 63 || v == MarkValue(strings.Repeat("x", 79)+"y") {
		t.Errorf("MarkValue(long) = %q", v)
	}
}
