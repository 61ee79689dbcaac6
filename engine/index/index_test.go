package index

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(ns string, md map[string]any, spec map[string]any) *unstructured.Unstructured {
	m := map[string]any{"name": "o"}
	if ns != "" {
		m["namespace"] = ns
	}
	for k, v := range md {
		m[k] = v
	}
	o := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": m}
	if spec != nil {
		o["spec"] = spec
	}
	return &unstructured.Unstructured{Object: o}
}

func owners(refs ...map[string]any) map[string]any {
	list := []any{}
	for _, r := range refs {
		list = append(list, r)
	}
	return map[string]any{"ownerReferences": list}
}

func TestChildIndexes(t *testing.T) {
	controller := map[string]any{"apiVersion": "x/v1", "kind": "P", "name": "p", "uid": "u1", "controller": true}
	plainOwner := map[string]any{"apiVersion": "x/v1", "kind": "P", "name": "q", "uid": "u2"}
	for _, tc := range []struct {
		name       string
		obj        *unstructured.Unstructured
		controller []string
		orphan     []string
	}{
		{"orphan in a namespace", obj("ns", nil, nil), nil, []string{"ns", AllNamespaces}},
		{"cluster-scoped orphan", obj("", nil, nil), nil, []string{""}},
		{"controlled", obj("ns", owners(controller), nil), []string{"u1"}, nil},
		{"plain owner only is an orphan", obj("ns", owners(plainOwner), nil), nil, []string{"ns", AllNamespaces}},
		{"controller among owners", obj("ns", owners(plainOwner, controller), nil), []string{"u1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := controllerUID(tc.obj)
			o, _ := orphanNamespace(tc.obj)
			if !slices.Equal(c, tc.controller) || !slices.Equal(o, tc.orphan) {
				t.Fatalf("ControllerUID %v OrphanNamespace %v, want %v %v", c, o, tc.controller, tc.orphan)
			}
		})
	}
}

func TestSelectorTerms(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"matchLabels", map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"a": "1", "b": "2"}}},
			[]string{"ns/a=1", "ns/b=2"}},
		{"expressions only", map[string]any{"selector": map[string]any{"matchExpressions": []any{}}}, []string{"ns/*"}},
		{"no selector", map[string]any{}, []string{"ns/*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := selectorTerms(obj("ns", nil, tc.spec))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("terms %v, want %v", got, tc.want)
			}
		})
	}
}

func TestControllerRef(t *testing.T) {
	o := obj("ns", owners(map[string]any{"apiVersion": "x/v1", "kind": "P", "name": "p", "uid": "u1", "controller": true}), nil)
	ref := ControllerRef(o)
	if ref == nil || ref.UID != "u1" || ref.Kind != "P" || ref.Name != "p" || ref.APIVersion != "x/v1" {
		t.Fatalf("ControllerRef = %+v", ref)
	}
	if ControllerRef(obj("ns", nil, nil)) != nil {
		t.Fatal("an orphan has no ControllerRef")
	}
}
