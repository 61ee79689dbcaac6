package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// TestResyncLeavesFailedParentsToTheirBackoff: a resync enqueues every parent but those whose
// last reconcile failed, which come back at their backoff.
func TestResyncLeavesFailedParentsToTheirBackoff(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, name := range []string{"ok", "failing"} {
		p := &unstructured.Unstructured{}
		p.SetNamespace("ns")
		p.SetName(name)
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runner{built: &Built{Declared: &Declared{}}, parents: []parentSource{{indexer: idx}},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[Request]())}
	defer r.queue.ShutDown()
	failing := Request{Key: "ns/failing"}
	r.queue.AddRateLimited(failing) // its reconcile failed: a retry is due at its backoff
	for r.queue.Len() > 0 || r.queue.NumRequeues(failing) == 0 {
		// wait for the backoff's retry to be queued, and take it: the retry fails again
		req, _ := r.queue.Get()
		r.queue.Done(req)
	}
	r.Resync()
	if got := r.queue.Len(); got != 1 {
		t.Fatalf("%d parents queued by the resync, want only the one that did not fail", got)
	}
	if req, _ := r.queue.Get(); req.Key != "ns/ok" {
		t.Fatalf("the resync queued %s, want ns/ok", req.Key)
	}
}
