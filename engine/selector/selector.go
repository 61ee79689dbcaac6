// Package selector parses the duck-typed spec.selector of parent objects (a
// metav1.LabelSelector) once per resourceVersion, for the event paths and reconciles of
// every kind whose parents choose objects by selector.
package selector

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
)

// Cache holds each parent's parsed spec.selector, keyed by UID and valid for one
// resourceVersion, so that routing an event to its candidate parents and reconciling do not
// convert and parse the selector again. It holds one entry per parent seen; Forget drops a
// deleted parent's. Safe for concurrent use: each informer routes on its own goroutine. The
// selectors it returns are shared and must not be modified.
type Cache struct {
	mu sync.Mutex
	m  map[types.UID]cachedSelector
	// emptySelectsAll: a missing or empty spec.selector selects everything instead of being
	// an error.
	emptySelectsAll bool
}

type cachedSelector struct {
	resourceVersion string
	sel             labels.Selector
	err             error
}

// NewCache returns a Cache in which a missing or empty spec.selector is an error: it would
// select every object, which is never what a parent adopting children means.
func NewCache() *Cache {
	return &Cache{m: make(map[types.UID]cachedSelector)}
}

// NewCacheSelectingAll returns a Cache in which a missing or empty spec.selector selects
// every object (the inputs of a MapController parent).
func NewCacheSelectingAll() *Cache {
	return &Cache{m: make(map[types.UID]cachedSelector), emptySelectsAll: true}
}

// Get returns the parsed spec.selector of p, parsed once per resourceVersion of p. Objects
// without a resourceVersion (not from the API server) are parsed every time.
func (c *Cache) Get(p *unstructured.Unstructured) (labels.Selector, error) {
	uid, rv := p.GetUID(), p.GetResourceVersion()
	c.mu.Lock()
	e, ok := c.m[uid]
	c.mu.Unlock()
	if ok && rv != "" && e.resourceVersion == rv {
		return e.sel, e.err
	}
	sel, err := parse(p, c.emptySelectsAll)
	if rv != "" {
		c.mu.Lock()
		c.m[uid] = cachedSelector{resourceVersion: rv, sel: sel, err: err}
		c.mu.Unlock()
	}
	return sel, err
}

// Forget drops the entry of a deleted parent.
func (c *Cache) Forget(uid types.UID) {
	c.mu.Lock()
	delete(c.m, uid)
	c.mu.Unlock()
}

// parse parses spec.selector. Unless emptySelectsAll, a missing or empty selector is an
// error.
func parse(parent *unstructured.Unstructured, emptySelectsAll bool) (labels.Selector, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(parent.Object, "spec", "selector")
	if (!found || raw == nil) && emptySelectsAll {
		return labels.Everything(), nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		if emptySelectsAll {
			return nil, errors.New("spec.selector is not an object")
		}
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
	if sel.Empty() && !emptySelectsAll {
		return nil, errors.New("spec.selector is empty: it would select every object")
	}
	return sel, nil
}

// Candidates returns the parents held by idx whose spec.selector matches lbls, found through
// idx's index.SelectorTerm index (one lookup per label, plus the parents whose selector has
// no matchLabels): never a scan of every parent. ns is the namespace of the parents to look
// at, "" for cluster-scoped parents. Each parent is returned once.
func (c *Cache) Candidates(idx cache.Indexer, ns string, lbls map[string]string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	seen := map[types.UID]bool{}
	consider := func(objs []any) {
		for _, obj := range objs {
			p, ok := obj.(*unstructured.Unstructured)
			if !ok || seen[p.GetUID()] {
				continue
			}
			seen[p.GetUID()] = true
			if sel, err := c.Get(p); err == nil && sel.Matches(labels.Set(lbls)) {
				out = append(out, p)
			}
		}
	}
	for k, v := range lbls {
		objs, _ := idx.ByIndex(index.SelectorTerm, index.SelectorTermKey(ns, k, v))
		consider(objs)
	}
	objs, _ := idx.ByIndex(index.SelectorTerm, index.AnySelectorKey(ns))
	consider(objs)
	return out
}
