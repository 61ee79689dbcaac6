package protocol

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/resources"
)

var (
	configMaps = resources.Resource{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
	namespaces = resources.Resource{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Namespaced: false}
)

func parentIn(ns string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{}
	p.SetName("p")
	p.SetNamespace(ns)
	return p
}

func TestObjectKeys(t *testing.T) {
	c := &unstructured.Unstructured{}
	c.SetName("n")
	c.SetNamespace("ns")
	for _, tc := range []struct {
		parentNS string
		res      resources.Resource
		version  v1alpha1.HookVersion
		want     string
	}{
		{"ns", configMaps, v1alpha1.HookVersionV1, "n"},
		{"", configMaps, v1alpha1.HookVersionV1, "ns/n"},
		{"ns", configMaps, v1alpha1.HookVersionV2, "ns/n"},
		{"", namespaces, v1alpha1.HookVersionV1, "n"},
	} {
		if got := ObjectKey(parentIn(tc.parentNS), tc.res, c, tc.version); got != tc.want {
			t.Errorf("ObjectKey(parent ns %q, %s, %s) = %q, want %q", tc.parentNS, tc.res.GVK.Kind, tc.version, got, tc.want)
		}
	}
}
