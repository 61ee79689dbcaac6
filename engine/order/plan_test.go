package order

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// waves is the order of TestGate: the Namespace first, ConfigMap a once it exists, ConfigMap
// b once a has data.ready "yes", the Cat once b is Ready.
func waves(t *testing.T) *Graph {
	g, err := Parse(map[string]any{"order": []any{
		entry(cmA, dep(space, nil)),
		entry(cmB, dep(cmA, map[string]any{"path": "data.ready", "value": "yes"})),
		entry(cat, dep(cmB, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}), dep(space, nil)),
	}}, children(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func observedOf(objs ...*unstructured.Unstructured) map[Key]*unstructured.Unstructured {
	m := map[Key]*unstructured.Unstructured{}
	for _, o := range objs {
		m[KeyOf(o)] = o
	}
	return m
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestGate(t *testing.T) {
	all := children()
	space, a, b, c := all[0], all[1], all[2], all[3]
	aReady := a.DeepCopy()
	aReady.Object["data"] = map[string]any{"ready": "yes"}
	bReady := withStatus(b, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}})
	for _, tc := range []struct {
		name     string
		observed map[Key]*unstructured.Unstructured
		write    []string
		waiting  string
	}{
		{"nothing observed: the first wave", observedOf(), []string{"space"},
			"[ConfigMap ns/a: [Namespace space: it does not exist yet] ConfigMap ns/b: [ConfigMap ns/a: it does not exist yet] " +
				"Cat ns/c: [ConfigMap ns/b: it does not exist yet Namespace space: it does not exist yet]]"},
		{"the Namespace exists", observedOf(space), []string{"space", "a"},
			"[ConfigMap ns/b: [ConfigMap ns/a: it does not exist yet] Cat ns/c: [ConfigMap ns/b: it does not exist yet]]"},
		{"a exists, not ready", observedOf(space, a), []string{"space", "a"},
			"[ConfigMap ns/b: [ConfigMap ns/a: it has no data.ready (want yes)] Cat ns/c: [ConfigMap ns/b: it does not exist yet]]"},
		{"a ready", observedOf(space, aReady), []string{"space", "a", "b"},
			"[Cat ns/c: [ConfigMap ns/b: it does not exist yet]]"},
		{"b exists, not ready", observedOf(space, aReady, b), []string{"space", "a", "b"},
			"[Cat ns/c: [ConfigMap ns/b: it has no condition Ready]]"},
		{"b ready", observedOf(space, aReady, bReady), []string{"space", "a", "b", "c"}, "[]"},
		{"an observed child is written while it waits", observedOf(space, c), []string{"space", "a", "c"},
			"[ConfigMap ns/b: [ConfigMap ns/a: it does not exist yet]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write, waiting := waves(t).Gate(children(), tc.observed)
			if got := names(write); !slices.Equal(got, tc.write) {
				t.Errorf("written %v, want %v", got, tc.write)
			}
			if got := describeWaiting(waiting); got != tc.waiting {
				t.Errorf("waiting %s\n want   %s", got, tc.waiting)
			}
		})
	}
	var none *Graph
	if write, waiting := none.Gate(children(), nil); len(write) != 4 || waiting != nil {
		t.Errorf("without an order: %v, %v; want every child written", names(write), waiting)
	}
}

func describeWaiting(ws []Waiting) string {
	out := "["
	for i, w := range ws {
		if i > 0 {
			out += " "
		}
		out += w.Child.String() + ": ["
		for j, u := range w.Unmet {
			if j > 0 {
				out += " "
			}
			out += u.Child.String() + ": " + u.Why
		}
		out += "]"
	}
	return out + "]"
}

func TestAnnotate(t *testing.T) {
	g := waves(t)
	all := children()
	all[0].SetAnnotations(map[string]string{AfterAnnotation: "set by the hook", "keep": "x"})
	for _, c := range all {
		g.Annotate(c)
	}
	if got := all[0].GetAnnotations(); len(got) != 1 || got["keep"] != "x" {
		t.Errorf("a child that waits for nothing has annotations %v; want the hook's own only", got)
	}
	if got := all[3].GetAnnotations()[AfterAnnotation]; got != `[{"apiVersion":"v1","kind":"ConfigMap","namespace":"ns","name":"b"},{"apiVersion":"v1","kind":"Namespace","name":"space"}]` {
		t.Errorf("Cat c: %s", got)
	}
	if got := fmt.Sprint(AfterOf(all[3])); got != "[ConfigMap ns/b Namespace space]" {
		t.Errorf("AfterOf = %s", got)
	}
	if !Carried(map[int][]*unstructured.Unstructured{0: all[:1], 1: all[1:]}) || Carried(map[int][]*unstructured.Unstructured{0: all[:1]}) {
		t.Error("Carried does not tell the children that record an order")
	}
	bad := obj("v1", "ConfigMap", "ns", "x")
	bad.SetAnnotations(map[string]string{AfterAnnotation: "not json"})
	if AfterOf(bad) != nil {
		t.Error("an unreadable annotation is read as something")
	}
}

// annotated is child with AfterAnnotation listing after.
func annotated(child *unstructured.Unstructured, after ...*unstructured.Unstructured) *unstructured.Unstructured {
	child = child.DeepCopy()
	var deps []any
	for _, a := range after {
		deps = append(deps, dep(map[string]any{"apiVersion": a.GetAPIVersion(), "kind": a.GetKind(), "name": a.GetName()}, nil))
	}
	g, err := Parse(map[string]any{"order": []any{entry(map[string]any{"apiVersion": child.GetAPIVersion(), "kind": child.GetKind(),
		"name": child.GetName()}, toMaps(deps)...)}}, children(), "ns")
	if err != nil {
		panic(err)
	}
	g.Annotate(child)
	return child
}

func toMaps(list []any) []map[string]any {
	out := make([]map[string]any, len(list))
	for i, v := range list {
		out[i] = v.(map[string]any)
	}
	return out
}

func TestHoldDeletions(t *testing.T) {
	all := children()
	space, a, b, c := all[0], annotated(all[1], all[0]), annotated(all[2], all[1]), annotated(all[3], all[2], all[0])
	// A stale cycle: a waits for b and b for a, as two different answers recorded them.
	aStale, bStale := annotated(all[1], all[2]), annotated(all[2], all[1])
	for _, tc := range []struct {
		name             string
		leaving, staying []*unstructured.Unstructured
		held             string
	}{
		{"all leave: the last wave goes first", []*unstructured.Unstructured{space, a, b, c}, []*unstructured.Unstructured{space, a, b, c},
			"[Namespace space by [Cat ns/c ConfigMap ns/a] ConfigMap ns/a by [ConfigMap ns/b] ConfigMap ns/b by [Cat ns/c]]"},
		{"the Cat is gone", []*unstructured.Unstructured{space, a, b}, []*unstructured.Unstructured{space, a, b},
			"[Namespace space by [ConfigMap ns/a] ConfigMap ns/a by [ConfigMap ns/b]]"},
		{"only the Namespace is left", []*unstructured.Unstructured{space}, []*unstructured.Unstructured{space}, "[]"},
		{"a child left untouched holds what it waits for", []*unstructured.Unstructured{b}, []*unstructured.Unstructured{b, c},
			"[ConfigMap ns/b by [Cat ns/c]]"},
		{"the answer keeps the waiter: nothing holds", []*unstructured.Unstructured{b}, []*unstructured.Unstructured{b}, "[]"},
		{"a stale cycle is not kept", []*unstructured.Unstructured{aStale, bStale}, []*unstructured.Unstructured{aStale, bStale}, "[]"},
		{"a stale cycle held from outside", []*unstructured.Unstructured{aStale, bStale}, []*unstructured.Unstructured{aStale, bStale, c},
			"[ConfigMap ns/a by [ConfigMap ns/b] ConfigMap ns/b by [Cat ns/c ConfigMap ns/a]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := HoldDeletions(tc.leaving, tc.staying)
			out := "["
			for i, h := range held {
				if i > 0 {
					out += " "
				}
				out += fmt.Sprintf("%s by %v", KeyOf(h.Child), h.Waiters)
			}
			if out += "]"; out != tc.held {
				t.Errorf("held %s\n want %s", out, tc.held)
			}
		})
	}
}
