package converge

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// convergence tracks, from the test's own watches, when every parent owns all its children
// and reports its current generation in its status.
type convergence struct {
	mu       sync.Mutex
	parents  map[types.UID]string
	children int
	owned    map[string]bool // ConfigMap names controlled by one of the parents
	current  map[string]bool // parent names whose status is current
	status   bool            // whether convergence includes every parent's status
	first    time.Time       // the first child was seen
	at       time.Time       // everything had converged
	done     chan struct{}   // closed at convergence
}

// watchConvergence starts watches of ns, synced when it returns, that stop with ctx.
func watchConvergence(t *testing.T, ctx context.Context, cfg *rest.Config, ns string, parents map[types.UID]string,
	children int, status bool) *convergence {
	t.Helper()
	c := &convergence{parents: parents, children: children, owned: map[string]bool{}, current: map[string]bool{},
		status: status, done: make(chan struct{})}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, ns, nil)
	handler := func(on func(*unstructured.Unstructured, bool)) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { on(obj.(*unstructured.Unstructured), true) },
			UpdateFunc: func(_, obj any) { on(obj.(*unstructured.Unstructured), true) },
			DeleteFunc: func(obj any) {
				if u, ok := obj.(*unstructured.Unstructured); ok {
					on(u, false)
				}
			},
		}
	}
	if _, err := factory.ForResource(configMaps).Informer().AddEventHandler(handler(c.child)); err != nil {
		t.Fatal(err)
	}
	if _, err := factory.ForResource(fanouts).Informer().AddEventHandler(handler(c.parent)); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("watch of %s did not sync", gvr)
		}
	}
	return c
}

// times returns when the first child was seen and when everything had converged.
func (c *convergence) times() (first, converged time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first, c.at
}

func (c *convergence) child(cm *unstructured.Unstructured, exists bool) {
	ref := metav1.GetControllerOfNoCopy(cm)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ours := c.parents[refUID(ref)]; exists && ours {
		if c.first.IsZero() {
			c.first = time.Now()
		}
		c.owned[cm.GetName()] = true
	} else {
		delete(c.owned, cm.GetName())
	}
	c.check()
}

func (c *convergence) parent(p *unstructured.Unstructured, exists bool) {
	g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	n, _, _ := unstructured.NestedInt64(p.Object, "status", "children")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current[p.GetName()] = exists && g == p.GetGeneration() && n == int64(c.children)
	c.check()
}

// check closes done the first time everything has converged. c.mu is held.
func (c *convergence) check() {
	if !c.at.IsZero() || len(c.owned) != len(c.parents)*c.children {
		return
	}
	current := 0
	for _, ok := range c.current {
		if ok {
			current++
		}
	}
	if current == len(c.parents) || !c.status {
		c.at = time.Now()
		close(c.done)
	}
}

func refUID(ref *metav1.OwnerReference) types.UID {
	if ref == nil {
		return ""
	}
	return ref.UID
}
