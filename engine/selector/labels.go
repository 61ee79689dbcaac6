package selector

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Labels returns obj's metadata.labels as labels.Labels, read in place: a selector matches
// them without the copy GetLabels makes, which reconciles and event paths that match every
// object of a namespace would make for each. The API server keeps only string values; one
// that is not reads as absent. obj must not change while the result is used.
func Labels(obj *unstructured.Unstructured) labels.Labels {
	meta, _ := obj.Object["metadata"].(map[string]any)
	m, _ := meta["labels"].(map[string]any)
	return objectLabels(m)
}

type objectLabels map[string]any

func (l objectLabels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

func (l objectLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

func (l objectLabels) Lookup(key string) (string, bool) {
	v, ok := l[key].(string)
	return v, ok
}
