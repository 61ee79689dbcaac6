package informers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// How event handlers read what an informer hands them.

// Object returns the object of an event: obj itself, or the last state the informer knew of
// an object whose deletion it missed (cache.DeletedFinalStateUnknown).
func Object(obj any) (*unstructured.Unstructured, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// Unchanged reports whether an update hands over an object at the resourceVersion it
// already had: a relist, not a change. Handlers that route by content ignore it; the parents
// resync on their own schedule.
func Unchanged(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	c, ok2 := cur.(*unstructured.Unstructured)
	return ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion()
}
