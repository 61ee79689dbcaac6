package informers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func at(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetName("o")
	u.SetResourceVersion(rv)
	return u
}

func TestObject(t *testing.T) {
	u := at("1")
	if got, ok := Object(u); !ok || got != u {
		t.Errorf("Object(an object) = %v, %v", got, ok)
	}
	if got, ok := Object(cache.DeletedFinalStateUnknown{Key: "o", Obj: u}); !ok || got != u {
		t.Errorf("Object(a missed deletion) = %v, %v", got, ok)
	}
	if _, ok := Object("not an object"); ok {
		t.Error("Object accepted a string")
	}
}

func TestUnchanged(t *testing.T) {
	if !Unchanged(at("5"), at("5")) {
		t.Error("a relist at the same resourceVersion counts as a change")
	}
	if Unchanged(at("5"), at("6")) {
		t.Error("a new resourceVersion counts as no change")
	}
	if Unchanged("x", at("5")) {
		t.Error("an update of something not an object counts as no change")
	}
}
