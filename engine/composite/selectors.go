package composite

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// selectorCache holds each parent's parsed spec.selector (parentSelector), keyed by UID and
// valid for one resourceVersion, so that routing an orphan's events to its candidate parents
// and reconciling do not convert and parse the selector again. It holds one entry per parent
// seen; forget drops a deleted parent's. Safe for concurrent use: each child informer routes
// on its own goroutine. The selectors it returns are shared and must not be modified.
type selectorCache struct {
	mu sync.Mutex
	m  map[types.UID]cachedSelector
}

type cachedSelector struct {
	resourceVersion string
	sel             labels.Selector
	err             error
}

func newSelectorCache() *selectorCache {
	return &selectorCache{m: make(map[types.UID]cachedSelector)}
}

// get returns parentSelector(p), parsed once per resourceVersion of p. Objects without a
// resourceVersion (not from the API server) are parsed every time.
func (c *selectorCache) get(p *unstructured.Unstructured) (labels.Selector, error) {
	uid, rv := p.GetUID(), p.GetResourceVersion()
	c.mu.Lock()
	e, ok := c.m[uid]
	c.mu.Unlock()
	if ok && rv != "" && e.resourceVersion == rv {
		return e.sel, e.err
	}
	sel, err := parentSelector(p)
	if rv != "" {
		c.mu.Lock()
		c.m[uid] = cachedSelector{resourceVersion: rv, sel: sel, err: err}
		c.mu.Unlock()
	}
	return sel, err
}

// forget drops the entry of a deleted parent.
func (c *selectorCache) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.m, uid)
	c.mu.Unlock()
}

// parentSelector parses spec.selector. A parent without one selects nothing, so it would own
// no children: that is reported as an error instead.
func parentSelector(parent *unstructured.Unstructured) (labels.Selector, error) {
	m, found, err := unstructured.NestedMap(parent.Object, "spec", "selector")
	if err != nil || !found {
		return nil, errors.New("spec.selector is missing or not an object (set it, or use generateSelector)")
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, errors.New("spec.selector is empty: it would select every object")
	}
	return sel, nil
}
