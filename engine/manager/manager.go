// Package manager watches CompositeController resources and keeps one composite.Runner per
// controller: creating a controller starts its runner, editing it (a new generation)
// recompiles its hooks and replaces the runner — every parent is synced again through the new
// runner's initial list — and deleting it stops the runner, all without restarting the
// process. It also writes each controller's own status: observedGeneration, the conditions
// HooksCompiled and Ready, and the counts of parents and children.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/resources"
)

// Options configure a Manager.
type Options struct {
	Dynamic   dynamic.Interface
	Kube      kubernetes.Interface
	Resolver  *resources.Resolver
	Informers *informers.Factory
	Compiler  hooks.Compiler
	Recorder  record.EventRecorder
	Metrics   *metrics.Metrics
	Log       *slog.Logger
	// Workers per controller.
	Workers int
	// StatusInterval is how often counts in controller statuses are refreshed; default 10s.
	StatusInterval time.Duration
}

// Manager runs the runners. Run is called once.
type Manager struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[string]
	cc    *informers.Informer
	ready atomic.Bool

	mu      sync.Mutex
	runners map[string]*running
}

type running struct {
	// uid and generation identify what this entry was built from: a controller deleted and
	// created again under the same name is a new controller even at the same generation.
	uid        types.UID
	generation int64
	runner     *composite.Runner
	// failed holds why no runner runs for this generation, if so.
	failed error
	// retry is set when the failure may mend itself (a resource not served yet).
	retry bool
}

// New returns a Manager.
func New(opts Options) *Manager {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 10 * time.Second
	}
	return &Manager{opts: opts, runners: map[string]*running{}}
}

// Ready reports whether the controller resources have been listed and each acted on once.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Run watches controller resources until ctx ends, then stops every runner, letting
// in-flight reconciles finish, and returns.
func (m *Manager) Run(ctx context.Context) error {
	m.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "compositecontrollers"})
	m.cc = m.opts.Informers.Acquire(v1alpha1.CompositeControllerResource)
	defer m.opts.Informers.Release(m.cc)
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			m.queue.Add(key)
		}
	}
	reg, err := m.cc.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		return err
	}
	defer m.cc.RemoveEventHandler(reg)
	if !cache.WaitForCacheSync(ctx.Done(), m.cc.HasSynced) {
		return ctx.Err()
	}
	initial := len(m.cc.Indexer().ListKeys())
	var done atomic.Int64
	if initial == 0 {
		m.ready.Store(true)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, quit := m.queue.Get()
				if quit {
					return
				}
				if err := m.sync(ctx, key); err != nil {
					m.opts.Log.Error("controller resource not started", "compositecontroller", key, "error", err.Error())
					m.queue.AddRateLimited(key)
				} else {
					m.queue.Forget(key)
				}
				m.queue.Done(key)
				if done.Add(1) >= int64(initial) {
					m.ready.Store(true)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.refreshStatuses(ctx)
	}()
	<-ctx.Done()
	m.queue.ShutDown()
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, r := range m.runners {
		if r.runner != nil {
			r.runner.Stop()
		}
		delete(m.runners, name)
	}
	return nil
}

// sync makes the runner of one controller match its current generation.
func (m *Manager) sync(ctx context.Context, name string) error {
	obj, exists, err := m.cc.Indexer().GetByKey(name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	cur := m.runners[name]
	m.mu.Unlock()
	if !exists {
		if cur != nil {
			m.stop(name, cur)
			m.opts.Log.Info("controller stopped", "compositecontroller", name)
		}
		return nil
	}
	u := obj.(*unstructured.Unstructured)
	if cur != nil && cur.uid == u.GetUID() && cur.generation == u.GetGeneration() && !cur.retry {
		return nil
	}
	var cc v1alpha1.CompositeController
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cc); err != nil {
		return m.fail(ctx, u, name, cur, "InvalidSpec", err, true)
	}
	cfg, compileErr, err := m.build(ctx, &cc, u)
	if compileErr != nil {
		return m.fail(ctx, u, name, cur, "CompileError", compileErr, true)
	}
	if err != nil {
		var nf *resources.NotFoundError
		if errors.As(err, &nf) {
			// A CRD may be installed later: retry, and say so meanwhile.
			_ = m.fail(ctx, u, name, cur, "ResourceNotFound", err, false)
			m.mu.Lock()
			m.runners[name].retry = true
			m.mu.Unlock()
			return err
		}
		return m.fail(ctx, u, name, cur, "InvalidSpec", err, false)
	}
	runner, err := composite.New(*cfg)
	if err != nil {
		return m.fail(ctx, u, name, cur, "InvalidSpec", err, false)
	}
	// Hold the informers across the swap so that replacing a runner does not re-list
	// every resource it watches.
	held := m.hold(cfg)
	defer m.release(held)
	if cur != nil {
		m.stop(name, cur)
	}
	if err := runner.Start(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	m.runners[name] = &running{uid: u.GetUID(), generation: u.GetGeneration(), runner: runner}
	m.mu.Unlock()
	m.opts.Metrics.Controllers.WithLabelValues("running").Inc()
	m.opts.Log.Info("controller started", "compositecontroller", name, "generation", u.GetGeneration())
	return m.writeStatus(ctx, u, statusOK(runner))
}

// hold takes a reference on every informer a runner of cfg uses; release returns them.
func (m *Manager) hold(cfg *composite.Config) []*informers.Informer {
	held := []*informers.Informer{m.opts.Informers.Acquire(cfg.Parent.GVR)}
	for _, c := range cfg.Children {
		held = append(held, m.opts.Informers.Acquire(c.GVR))
	}
	return held
}

func (m *Manager) release(held []*informers.Informer) {
	for _, inf := range held {
		m.opts.Informers.Release(inf)
	}
}

func (m *Manager) stop(name string, cur *running) {
	if cur.runner != nil {
		cur.runner.Stop()
		m.opts.Metrics.Controllers.WithLabelValues("running").Dec()
	} else {
		m.opts.Metrics.Controllers.WithLabelValues("failed").Dec()
	}
	m.mu.Lock()
	delete(m.runners, name)
	m.mu.Unlock()
}

// fail records that this generation of the controller does not run, in its status and in an
// Event. compiled says whether the failure is about the hooks (HooksCompiled=False) or not.
// It returns nil for failures that a retry cannot mend.
func (m *Manager) fail(ctx context.Context, u *unstructured.Unstructured, name string, cur *running,
	reason string, cause error, hooksFailed bool) error {
	if cur != nil {
		m.stop(name, cur)
	}
	m.mu.Lock()
	m.runners[name] = &running{uid: u.GetUID(), generation: u.GetGeneration(), failed: cause}
	m.mu.Unlock()
	m.opts.Metrics.Controllers.WithLabelValues("failed").Inc()
	m.opts.Recorder.Event(u, corev1.EventTypeWarning, reason, cause.Error())
	m.opts.Log.Error("controller cannot run", "compositecontroller", name, "reason", reason, "error", cause.Error())
	st := status{ready: metav1.ConditionFalse, readyReason: reason, readyMsg: cause.Error(),
		compiled: metav1.ConditionTrue, compiledReason: "Compiled", compiledMsg: "every hook compiled"}
	if hooksFailed {
		st.compiled, st.compiledReason, st.compiledMsg = metav1.ConditionFalse, reason, cause.Error()
	}
	return m.writeStatus(ctx, u, st)
}

// build resolves the controller's resources and compiles its hooks. A compile error is
// returned apart, because it is reported as HooksCompiled=False.
func (m *Manager) build(ctx context.Context, cc *v1alpha1.CompositeController, u *unstructured.Unstructured) (*composite.Config, error, error) {
	if cc.Spec.Hooks == nil || cc.Spec.Hooks.Sync == nil {
		return nil, nil, errors.New("spec.hooks.sync is required")
	}
	if cc.Spec.Hooks.Customize != nil {
		return nil, nil, errors.New("spec.hooks.customize is not supported yet")
	}
	var compileErrs []error
	compile := func(hook string, def *v1alpha1.Hook) hooks.Invoker {
		if def == nil {
			return nil
		}
		inv, err := hooks.Build(ctx, hooks.Spec{Controller: "compositecontroller/" + cc.Name, Hook: hook, Def: def,
			Shared: cc.Spec.Script}, m.opts.Compiler, configMaps{m.opts.Kube})
		if err != nil {
			compileErrs = append(compileErrs, fmt.Errorf("hooks.%s: %w", hook, err))
		}
		return inv
	}
	sync, finalize := compile("sync", cc.Spec.Hooks.Sync), compile("finalize", cc.Spec.Hooks.Finalize)
	if len(compileErrs) > 0 {
		return nil, errors.Join(compileErrs...), nil
	}
	parent, err := m.opts.Resolver.Resolve(cc.Spec.ParentResource.APIVersion, cc.Spec.ParentResource.Resource)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.parentResource: %w", err)
	}
	var children []resources.Resource
	for i, c := range cc.Spec.ChildResources {
		res, err := m.opts.Resolver.Resolve(c.APIVersion, c.Resource)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.childResources[%d]: %w", i, err)
		}
		children = append(children, res)
	}
	return &composite.Config{
		Controller:       cc,
		ControllerObject: u.Object,
		Parent:           parent,
		Children:         children,
		Sync:             sync,
		Finalize:         finalize,
		Client:           m.opts.Dynamic,
		Informers:        m.opts.Informers,
		Recorder:         m.opts.Recorder,
		Metrics:          m.opts.Metrics,
		Log:              m.opts.Log.With("compositecontroller", cc.Name),
		Workers:          m.opts.Workers,
	}, nil, nil
}
