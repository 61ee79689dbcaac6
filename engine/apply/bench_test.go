package apply

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkUpToDate measures the steady-state cost per child of deciding that no request is
// needed: normalizing the desired object, hashing it and comparing it with the observed one.
func BenchmarkUpToDate(b *testing.B) {
	for _, keys := range []int{10, 100} {
		desired := map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{
				"name": "child", "namespace": "ns",
				"labels": map[string]interface{}{"app": "a", "tier": "web"},
			},
		}
		data := map[string]interface{}{}
		for i := range keys {
			data[fmt.Sprintf("key-%d", i)] = fmt.Sprintf("value-%d", i)
		}
		desired["data"] = data
		config, _, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
		if err != nil {
			b.Fatal(err)
		}
		observed := config.DeepCopy()
		observed.SetUID("child-uid")
		d := &unstructured.Unstructured{Object: desired}
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ok, err := UpToDate(testOwner, d, observed)
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
