package reconcile

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/resources"
)

// related is a Runner's state for related objects: the routing index, the informers of
// the resources recorded rules name (started when a rule first names a resource, stopped
// when no recorded rule does), and each parent's last customize answer.
type related struct {
	index *relatedIndex

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]*relatedSource
	answers   map[types.UID]customizeAnswer
}

type relatedSource struct {
	informer *informers.Informer
	reg      cache.ResourceEventHandlerRegistration
	users    int // parents whose recorded rules read it
}

// customizeAnswer is a parent's customize answer, valid while the parent's fingerprint is.
type customizeAnswer struct {
	fingerprint string
	rules       []RelatedRule
}

func newRelated() *related {
	return &related{index: newRelatedIndex(), informers: map[schema.GroupVersionResource]*relatedSource{},
		answers: map[types.UID]customizeAnswer{}}
}

// ensure starts the informers of ress that are not running yet and waits for them to sync.
func (r *Runner) ensureRelated(ctx context.Context, ress []resources.Resource) error {
	var wait []cache.InformerSynced
	rel := r.related
	rel.mu.Lock()
	for _, res := range ress {
		if src := rel.informers[res.GVR]; src != nil {
			wait = append(wait, src.informer.HasSynced)
			continue
		}
		inf := r.cfg.Informers.Acquire(res.GVR)
		reg, err := inf.AddEventHandler(r.relatedHandler(res.GVR))
		if err != nil {
			r.cfg.Informers.Release(inf)
			rel.mu.Unlock()
			return err
		}
		rel.informers[res.GVR] = &relatedSource{informer: inf, reg: reg}
		wait = append(wait, inf.HasSynced)
	}
	rel.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), wait...) {
		return fmt.Errorf("caches of related resources did not sync: %w", ctx.Err())
	}
	return nil
}

// relatedCache is the cache of a related resource, nil when none runs.
func (r *Runner) relatedCache(res resources.Resource) cache.Indexer {
	r.related.mu.Lock()
	defer r.related.mu.Unlock()
	if src := r.related.informers[res.GVR]; src != nil {
		return src.informer.Indexer()
	}
	return nil
}

// recordRelated binds a parent to the rules its last reconcile used, and stops the informers
// no recorded rule names any more.
func (r *Runner) recordRelated(req Request, rules []RelatedRule) {
	old := r.related.index.record(req, rules)
	rel := r.related
	rel.mu.Lock()
	defer rel.mu.Unlock()
	for _, res := range relatedResources(old) {
		if src := rel.informers[res.GVR]; src != nil {
			src.users--
		}
	}
	for _, res := range relatedResources(rules) {
		if src := rel.informers[res.GVR]; src != nil {
			src.users++
		}
	}
	r.pruneRelatedLocked()
}

// pruneRelated stops related informers no recorded rule names (started for a reconcile
// that failed before recording).
func (r *Runner) pruneRelated() {
	r.related.mu.Lock()
	defer r.related.mu.Unlock()
	r.pruneRelatedLocked()
}

func (r *Runner) pruneRelatedLocked() {
	for gvr, src := range r.related.informers {
		if src.users <= 0 {
			_ = src.informer.RemoveEventHandler(src.reg)
			r.cfg.Informers.Release(src.informer)
			delete(r.related.informers, gvr)
		}
	}
}

// stopRelated stops every related informer (Runner.Stop).
func (r *Runner) stopRelated() {
	r.related.mu.Lock()
	defer r.related.mu.Unlock()
	for gvr, src := range r.related.informers {
		_ = src.informer.RemoveEventHandler(src.reg)
		r.cfg.Informers.Release(src.informer)
		delete(r.related.informers, gvr)
	}
}

// forgetRelated drops a deleted parent's rules and answer.
func (r *Runner) forgetRelated(req Request, uid types.UID) {
	r.recordRelated(req, nil)
	r.related.mu.Lock()
	delete(r.related.answers, uid)
	r.related.mu.Unlock()
}

// relatedHandler routes the events of a related resource to the parents whose recorded
// rules select the object as it was or as it is. Namespace label changes also reach every
// parent selecting by namespace labels.
func (r *Runner) relatedHandler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	nsLabels := namespaceLabels(r.relatedCache)
	route := func(objs ...any) {
		seen := map[Request]bool{}
		for _, obj := range objs {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			for _, req := range r.related.index.route(gvr, u, nsLabels) {
				if !seen[req] {
					seen[req] = true
					r.queue.Add(req)
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { route(obj) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
				return // a relist: parents resync on their own schedule
			}
			route(old, cur)
			if gvr == namespaces.GVR && ok1 && ok2 && !maps.Equal(o.GetLabels(), c.GetLabels()) {
				for _, req := range r.related.index.namespaceLabelUsers() {
					r.queue.Add(req)
				}
			}
		},
		DeleteFunc: func(obj any) { route(obj) },
	}
}
