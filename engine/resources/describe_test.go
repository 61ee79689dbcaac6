package resources

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDescribe(t *testing.T) {
	cm := Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetName("a")
	if got := cm.Describe(o); got != "ConfigMap a" {
		t.Errorf("without a namespace: %q", got)
	}
	o.SetNamespace("ns")
	if got := cm.Describe(o); got != "ConfigMap ns/a" {
		t.Errorf("with a namespace: %q", got)
	}
}
