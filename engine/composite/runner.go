// Package composite is the CompositeController reconciler: one Runner per controller
// resource watches its parent and child resources through shared informers, maps every event
// to parent keys through named indexes, and reconciles each parent from the cache: claim
// children → invoke the sync or finalize hook → validate → write children → write status.
//
// A hook failure of any kind (error, budget, invalid output, webhook down) writes nothing:
// adoptions, releases, child writes and the status write all happen after a valid response.
package composite

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/resources"
)

// Labels and finalizers the engine writes.
const (
	// ControllerUIDLabel holds the parent's UID on children of generateSelector controllers.
	ControllerUIDLabel = "metascript.dev/controller-uid"
	// FinalizerPrefix + controller name is the finalizer held while a finalize hook exists.
	FinalizerPrefix = "metascript.dev/compositecontroller-"
)

// Config is everything a Runner needs. Hooks are already compiled.
type Config struct {
	Controller *v1alpha1.CompositeController
	// ControllerObject is the controller resource as hooks see it (request.controller).
	ControllerObject map[string]any
	Parent           resources.Resource
	Children         []resources.Resource
	Sync, Finalize   hooks.Invoker
	Client           dynamic.Interface
	Informers        *informers.Factory
	Recorder         record.EventRecorder
	Metrics          *metrics.Metrics
	Log              *slog.Logger
	// Workers reconcile parents concurrently; at least 1.
	Workers int
}

type childRule struct {
	resources.Resource
	method   v1alpha1.ChildUpdateMethod
	informer *informers.Informer
}

// Runner reconciles the parents of one CompositeController. Start and Stop are called once each.
type Runner struct {
	cfg         Config
	name        string
	finalizer   string
	hookVersion v1alpha1.HookVersion
	parentSel   labels.Selector // spec.parentResource.labelSelector
	parent      *informers.Informer
	rules       []childRule
	queue       workqueue.TypedRateLimitingInterface[string]
	apply       *apply.Applier
	regs        []registration
	cancel      context.CancelFunc
	workers     sync.WaitGroup
	background  sync.WaitGroup
	stopping    atomic.Bool

	countsMu sync.Mutex
	counts   map[string]int // parent key → owned children at its last reconcile

	selectors *selectorCache // parents' spec.selector, parsed once per resourceVersion
}

type registration struct {
	inf *informers.Informer
	reg cache.ResourceEventHandlerRegistration
}

// New validates cfg and returns a Runner that is not started yet.
func New(cfg Config) (*Runner, error) {
	cc := cfg.Controller
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	sel := labels.Everything()
	if ls := cc.Spec.ParentResource.LabelSelector; ls != nil {
		s, err := metav1LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("spec.parentResource.labelSelector: %w", err)
		}
		sel = s
	}
	r := &Runner{
		cfg:       cfg,
		name:      cc.Name,
		finalizer: FinalizerPrefix + cc.Name,
		parentSel: sel,
		counts:    map[string]int{},
		selectors: newSelectorCache(),
		apply:     apply.New(cfg.Client, cc.Name),
	}
	if cfg.Sync != nil && cc.Spec.Hooks.Sync != nil {
		r.hookVersion = cc.Spec.Hooks.Sync.Version
	}
	for i, res := range cfg.Children {
		if cfg.Parent.Namespaced && !res.Namespaced {
			return nil, fmt.Errorf("spec.childResources[%d]: %s is cluster-scoped but the parent %s is namespaced",
				i, res.GVR.Resource, cfg.Parent.GVR.Resource)
		}
		method := v1alpha1.ChildUpdateOnDelete
		if us := cc.Spec.ChildResources[i].UpdateStrategy; us != nil && us.Method != "" {
			method = us.Method
		}
		switch method {
		case v1alpha1.ChildUpdateRollingInPlace, v1alpha1.ChildUpdateRollingRecreate:
			return nil, fmt.Errorf("spec.childResources[%d].updateStrategy.method: %s is not supported yet (use OnDelete, Recreate or InPlace)", i, method)
		}
		r.rules = append(r.rules, childRule{Resource: res, method: method})
	}
	return r, nil
}

// Start acquires the informers, registers indexes and event handlers, waits for the caches
// to sync (or ctx to end) and starts the workers. It returns once workers run.
func (r *Runner) Start(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(ctx)
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "compositecontroller/" + r.name})
	r.parent = r.cfg.Informers.Acquire(r.cfg.Parent.GVR)
	if err := index.RegisterParentIndexes(r.parent); err != nil {
		r.releaseAll()
		return err
	}
	synced := []cache.InformerSynced{r.parent.HasSynced}
	for i := range r.rules {
		inf := r.cfg.Informers.Acquire(r.rules[i].GVR)
		r.rules[i].informer = inf
		if err := index.RegisterChildIndexes(inf); err != nil {
			r.releaseAll()
			return err
		}
		synced = append(synced, inf.HasSynced)
	}
	if err := r.addHandler(r.parent, r.parentHandler()); err != nil {
		r.releaseAll()
		return err
	}
	for i := range r.rules {
		if err := r.addHandler(r.rules[i].informer, r.childHandler()); err != nil {
			r.releaseAll()
			return err
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		r.releaseAll()
		return fmt.Errorf("caches of %s did not sync: %w", r.name, ctx.Err())
	}
	for range r.cfg.Workers {
		r.workers.Add(1)
		go func() {
			defer r.workers.Done()
			for r.processNext(ctx) {
			}
		}()
	}
	if p := r.cfg.Controller.Spec.ResyncPeriodSeconds; p != nil && *p > 0 {
		r.background.Add(1)
		go func() {
			defer r.background.Done()
			r.resyncEvery(ctx, time.Duration(*p)*time.Second)
		}()
	}
	return nil
}

// Stop stops accepting work, drops what is queued, lets in-flight reconciles finish, removes
// the event handlers and releases the informers. It blocks until the workers have returned.
func (r *Runner) Stop() {
	r.stopping.Store(true)
	r.queue.ShutDown()
	r.workers.Wait()
	r.cancel()
	r.background.Wait()
	r.releaseAll()
}

func (r *Runner) releaseAll() {
	for _, reg := range r.regs {
		_ = reg.inf.RemoveEventHandler(reg.reg)
	}
	r.regs = nil
	if r.parent != nil {
		r.cfg.Informers.Release(r.parent)
		r.parent = nil
	}
	for i := range r.rules {
		if r.rules[i].informer != nil {
			r.cfg.Informers.Release(r.rules[i].informer)
			r.rules[i].informer = nil
		}
	}
}

func (r *Runner) addHandler(inf *informers.Informer, h cache.ResourceEventHandler) error {
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return err
	}
	r.regs = append(r.regs, registration{inf: inf, reg: reg})
	return nil
}

// Counts returns how many parents the controller watches and how many children they owned
// at their last reconcile.
func (r *Runner) Counts() (parents, children int) {
	if r.parent != nil {
		for _, obj := range r.parent.Indexer().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok && r.parentSel.Matches(labels.Set(u.GetLabels())) {
				parents++
			}
		}
	}
	r.countsMu.Lock()
	defer r.countsMu.Unlock()
	for _, n := range r.counts {
		children += n
	}
	return parents, children
}

func (r *Runner) processNext(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if r.stopping.Load() {
		return true
	}
	start := time.Now()
	res, err := r.reconcile(ctx, key)
	r.cfg.Metrics.ReconcileDuration.WithLabelValues(r.name).Observe(time.Since(start).Seconds())
	if err != nil {
		r.cfg.Metrics.Reconciles.WithLabelValues(r.name, "error").Inc()
		r.cfg.Log.Info("reconcile failed; retrying with backoff", "parent", key, "error", err.Error())
		r.queue.AddRateLimited(key)
		return true
	}
	r.cfg.Metrics.Reconciles.WithLabelValues(r.name, "success").Inc()
	r.queue.Forget(key)
	if res.resyncAfter > 0 {
		r.queue.AddAfter(key, res.resyncAfter)
	}
	return true
}

func (r *Runner) resyncEvery(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, key := range r.parent.Indexer().ListKeys() {
				r.queue.Add(key)
			}
		}
	}
}
