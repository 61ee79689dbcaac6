package order

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/protocol"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	o.SetName(name)
	o.SetNamespace(ns)
	return o
}

// children of a namespaced parent in ns: a cluster-scoped Namespace, two ConfigMaps, a Cat.
func children() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		obj("v1", "Namespace", "", "space"),
		obj("v1", "ConfigMap", "ns", "a"),
		obj("v1", "ConfigMap", "ns", "b"),
		obj("examples.metascript.dev/v1alpha1", "Cat", "ns", "c"),
	}
}

func key(apiVersion, kind, name string, ns ...string) map[string]any {
	k := map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name}
	if len(ns) > 0 {
		k["namespace"] = ns[0]
	}
	return k
}

func entry(child map[string]any, after ...map[string]any) map[string]any {
	list := make([]any, len(after))
	for i, a := range after {
		list[i] = a
	}
	return map[string]any{"child": child, "after": list}
}

func dep(child map[string]any, ready any) map[string]any {
	d := map[string]any{"child": child}
	if ready != nil {
		d["ready"] = ready
	}
	return d
}

var (
	cmA   = key("v1", "ConfigMap", "a")
	cmB   = key("v1", "ConfigMap", "b")
	cat   = key("examples.metascript.dev/v1alpha1", "Cat", "c")
	space = key("v1", "Namespace", "space")
)

func TestParseRefusesWithAPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order any
		want  string
	}{
		{"not a list", map[string]any{}, "order: expected a list, got object"},
		{"entry not object", []any{"a"}, "order[0]: expected an object, got string"},
		{"unknown entry field", []any{map[string]any{"child": cmA, "before": []any{}}}, "order[0].before: unknown field"},
		{"no child", []any{map[string]any{"after": []any{}}}, "order[0].child: required"},
		{"no after", []any{map[string]any{"child": cmA}}, "order[0].after: required"},
		{"key without kind", []any{entry(map[string]any{"apiVersion": "v1", "name": "a"})}, "order[0].child.kind: required string"},
		{"key name not string", []any{entry(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": int64(1)})},
			"order[0].child.name: required string"},
		{"unknown key field", []any{entry(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "x"})},
			"order[0].child.uid: unknown field"},
		{"key names no child", []any{entry(key("v1", "ConfigMap", "zz"), dep(cmA, nil))},
			"order[0].child: v1 ConfigMap ns/zz names no child of this answer's children"},
		{"key in another namespace", []any{entry(key("v1", "ConfigMap", "a", "other"), dep(cmB, nil))},
			"order[0].child: v1 ConfigMap other/a names no child"},
		{"dependency names no child", []any{entry(cmA, dep(key("v1", "Secret", "s"), nil))},
			"order[0].after[0].child: v1 Secret ns/s names no child"},
		{"wrong group", []any{entry(cmA, dep(key("other.dev/v1", "Cat", "c"), nil))}, "order[0].after[0].child: other.dev/v1 Cat ns/c names no child"},
		{"child twice", []any{entry(cmB, dep(cmA, nil)), entry(cmB, dep(cat, nil))}, "order[1].child: ConfigMap ns/b is listed already at order[0]"},
		{"dependency twice", []any{entry(cmB, dep(cmA, nil), dep(cmA, nil))}, "order[0].after[1].child: ConfigMap ns/a is listed twice"},
		{"rule not object", []any{entry(cmB, dep(cmA, "Ready"))}, "order[0].after[0].ready: expected an object, got string"},
		{"empty rule", []any{entry(cmB, dep(cmA, map[string]any{}))}, "order[0].after[0].ready: give conditions or path"},
		{"both rules", []any{entry(cmB, dep(cmA, map[string]any{"path": "status.phase", "value": "x", "conditions": []any{}}))},
			"order[0].after[0].ready: give conditions or path, not both"},
		{"unknown rule field", []any{entry(cmB, dep(cmA, map[string]any{"phase": "x"}))}, "order[0].after[0].ready.phase: unknown field"},
		{"empty conditions", []any{entry(cmB, dep(cmA, map[string]any{"conditions": []any{}}))},
			"order[0].after[0].ready.conditions: expected a non-empty list"},
		{"condition without type", []any{entry(cmB, dep(cmA, map[string]any{"conditions": []any{map[string]any{"status": "True"}}}))},
			"order[0].after[0].ready.conditions[0].type: required string"},
		{"condition status not string", []any{entry(cmB, dep(cmA, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": true}}}))},
			"order[0].after[0].ready.conditions[0].status: expected string, got bool"},
		{"path without value", []any{entry(cmB, dep(cmA, map[string]any{"path": "status.phase"}))},
			"order[0].after[0].ready.value: required"},
		{"empty path segment", []any{entry(cmB, dep(cmA, map[string]any{"path": "status..phase", "value": "x"}))},
			"order[0].after[0].ready.path: \"status..phase\" has an empty segment"},
		{"value without path", []any{entry(cmB, dep(cmA, map[string]any{"value": "x"}))}, "order[0].after[0].ready.value: goes with path"},
		{"waits for itself", []any{entry(cmA, dep(cmA, nil))}, "order[0]: a cycle: ConfigMap ns/a waits for ConfigMap ns/a"},
		{"cycle of three", []any{entry(space), entry(cmA, dep(cat, nil)), entry(cmB, dep(cmA, nil)), entry(cat, dep(cmB, nil), dep(space, nil))},
			"order[1]: a cycle: ConfigMap ns/a waits for Cat ns/c waits for ConfigMap ns/b waits for ConfigMap ns/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(map[string]any{"order": tc.order}, children(), "ns")
			if err == nil {
				t.Fatalf("accepted %v", tc.order)
			}
			if _, ok := err.(*protocol.InvalidResponseError); !ok {
				t.Errorf("error %T, want *protocol.InvalidResponseError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseReadsKeysAndRules(t *testing.T) {
	resp := map[string]any{"order": []any{
		entry(cmA, dep(space, nil)),
		entry(key("v1", "ConfigMap", "b", "ns"), dep(cmA, map[string]any{"path": "data.ready", "value": "yes"})),
		entry(key("examples.metascript.dev/v1beta1", "Cat", "c"), dep(cmB, map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Up"}}})),
	}}
	g, err := Parse(resp, children(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	a := g.After(Key{Kind: "ConfigMap", Namespace: "ns", Name: "a"})
	if len(a) != 1 || a[0].Child != (Key{Kind: "Namespace", Name: "space"}) || a[0].Ready.Describe() != "to exist" {
		t.Errorf("ConfigMap a waits for %+v, want Namespace space (a cluster-scoped key without namespace) to exist", a)
	}
	b := g.After(Key{Kind: "ConfigMap", Namespace: "ns", Name: "b"})
	if len(b) != 1 || b[0].Ready.Describe() != "data.ready = yes" {
		t.Errorf("ConfigMap b waits for %+v", b)
	}
	c := g.After(Key{Group: "examples.metascript.dev", Kind: "Cat", Namespace: "ns", Name: "c"})
	if len(c) != 1 || c[0].Ready.Describe() != "condition Ready True (reason Up)" {
		t.Errorf("Cat c (named at another version) waits for %+v", c)
	}
	if g.After(Key{Kind: "Namespace", Name: "space"}) != nil {
		t.Error("Namespace space waits for something")
	}
	for _, absent := range []map[string]any{{}, {"order": nil}} {
		if g, err := Parse(absent, children(), "ns"); g != nil || err != nil {
			t.Errorf("Parse(%v) = %v, %v; want no order", absent, g, err)
		}
	}
	if g, err := Parse(map[string]any{"order": []any{}}, children(), "ns"); g == nil || err != nil {
		t.Errorf("an empty order: %v, %v; want an empty graph", g, err)
	}
}

func withStatus(o *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	o = o.DeepCopy()
	o.Object["status"] = status
	return o
}

func TestReady(t *testing.T) {
	readyTrue := Rule{Conditions: mustRule(t, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}).Conditions}
	phase := mustRule(t, map[string]any{"path": "status.phase", "value": "Active"})
	count := mustRule(t, map[string]any{"path": "status.count", "value": int64(2)})
	base := obj("v1", "ConfigMap", "ns", "a")
	deleting := base.DeepCopy()
	deleting.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2024-01-01T00:00:00Z"
	for _, tc := range []struct {
		name string
		rule Rule
		obj  *unstructured.Unstructured
		ok   bool
		why  string
	}{
		{"exists", Rule{}, base, true, ""},
		{"being deleted", Rule{}, deleting, false, "it is being deleted"},
		{"no condition", readyTrue, base, false, "it has no condition Ready"},
		{"condition False", readyTrue, withStatus(base, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}),
			false, "condition Ready is False (want True)"},
		{"condition True", readyTrue, withStatus(base, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}), true, ""},
		{"no field", phase, base, false, "it has no status.phase (want Active)"},
		{"other value", phase, withStatus(base, map[string]any{"phase": "Pending"}), false, "status.phase is Pending (want Active)"},
		{"value", phase, withStatus(base, map[string]any{"phase": "Active"}), true, ""},
		{"number as float", count, withStatus(base, map[string]any{"count": float64(2)}), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := tc.rule.Ready(tc.obj)
			if ok != tc.ok || why != tc.why {
				t.Errorf("Ready = %v, %q; want %v, %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}

func mustRule(t *testing.T, raw map[string]any) Rule {
	t.Helper()
	r, err := parseRule("ready", raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
