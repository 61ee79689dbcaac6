package informers

import (
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestTransformLeavesStoredObjectsAlone: the transform drops managedFields, and an object
// that holds none (one already in the store, handed back as deleted by a resync pass) is
// only read, so handlers reading it at the same time do not race (the race detector fails
// this test if the transform writes).
func TestTransformLeavesStoredObjectsAlone(t *testing.T) {
	fresh := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"name": "c", "managedFields": []any{map[string]any{"manager": "m"}}}}}
	if _, err := dropManagedFields(fresh); err != nil {
		t.Fatal(err)
	}
	if _, held := fresh.Object["metadata"].(map[string]any)["managedFields"]; held {
		t.Fatal("managedFields kept")
	}

	stored := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"name": "c", "ownerReferences": []any{}}}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				_ = stored.Object["metadata"].(map[string]any)["ownerReferences"]
			}
		}()
	}
	for range 1000 {
		if _, err := dropManagedFields(stored); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
