// Package manager watches the controller resources of every kind (CompositeController,
// DecoratorController, MapController) and keeps one reconcile.Runner per controller:
// creating a controller starts its runner, editing it (a new generation) recompiles its hooks
// and replaces the runner — every parent is synced again through the new runner's initial list — and deleting
// it stops the runner, all without restarting the process. It also writes each controller's
// own status: observedGeneration, the conditions HooksCompiled, Ready and BudgetsCapped, and
// the counts of parents and children.
package manager

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"metascript.dev/metascript/engine/fairshare"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/rollout"
	"metascript.dev/metascript/engine/trace"
	"metascript.dev/metascript/scripting"
)

// Options configure a Manager.
type Options struct {
	Dynamic   dynamic.Interface
	Kube      kubernetes.Interface
	Resolver  *resources.Resolver
	Informers *informers.Factory
	Compiler  hooks.Compiler
	// Isolated compiles the inline hooks of controllers with spec.isolation: Process (the
	// isolated tier, scripting/isolated); nil refuses such controllers.
	Isolated hooks.Compiler
	// Ceilings are the most any hook invocation may use; a controller asking for more is
	// told so in its status (BudgetsCapped).
	Ceilings scripting.Budget
	// WebhookCeiling, when positive, caps every webhook hook's timeout, as Ceilings cap
	// inline budgets.
	WebhookCeiling time.Duration
	// MaxAnswerBytes bounds one webhook answer (0: hooks.DefaultMaxAnswer); AnswerMemory,
	// when set, is the room every webhook answer held by a reconcile in flight shares.
	MaxAnswerBytes int64
	AnswerMemory   *fairshare.Bytes
	// MaxSourceBytes, when positive, bounds the inline source one controller compiles
	// (hooks.SourceMeter).
	MaxSourceBytes int64
	Recorder       record.EventRecorder
	// Recorders, when set, makes the Event recorder of one controller's runner: Events it
	// records draw on the engine's rate as the controller's flow. Unset, runners use Recorder.
	Recorders func(fairshare.Flow) record.EventRecorder
	// Identities makes the clients of controllers that name a ServiceAccount; nil refuses
	// such controllers.
	Identities *identity.Source
	Metrics    *metrics.Metrics
	Log        *slog.Logger
	// Workers per controller.
	Workers int
	// HookCalls bounds each controller's hook calls at once; 0: no bound.
	HookCalls int
	// Seats are the concurrent reconciles all controllers share; nil: none.
	Seats *fairshare.Slots
	// Cores are the slots of inline hook calls all controllers share; nil: none.
	Cores *fairshare.Cores
	// StatusInterval is how often counts in controller statuses are refreshed; default 10s.
	StatusInterval time.Duration
	// Trace, when set, records every runner's reconciles (engine/trace).
	Trace *trace.Recorder
	// RemovalGrace bounds how long the finalize hooks of a deleted controller may take for
	// the parents being deleted, before those are released without them; default 5 minutes.
	RemovalGrace time.Duration
	// RevisionNamespace holds the rollout revisions of cluster-scoped parents (reconcile.Env).
	RevisionNamespace string
	// Shard, when set, is the engine's place in a ring of replicas sharing the work: each
	// runner reconciles the parents the engine owns, and one member writes each controller's
	// status. Unset, this engine does all the work.
	Shard Shard
	// TenantAccounts says which of its namespace's ServiceAccounts a namespaced controller
	// may act as; the zero value, its namespace's "default" only.
	TenantAccounts TenantAccounts
	// TenantWebhooks is the policy namespaced controllers' webhooks are built under
	// (hooks.Spec.Tenant); nil: the default one, with no Allow lists.
	TenantWebhooks *hooks.Egress
	// TenantWebhooksForAll builds cluster-scoped controllers' webhooks under TenantWebhooks
	// too; false leaves them as the platform wrote them.
	TenantWebhooksForAll bool
}

// Shard is what the manager needs of the engine's place in a ring of replicas;
// *shard.Member is one.
type Shard interface {
	reconcile.Shard
	// Leads reports whether the engine writes what only one replica should (a controller's
	// status); two may, for a moment, while the ring changes.
	Leads(key string) bool
	// Members is how many replicas share the work.
	Members() int
	// OnGain registers a function called when the engine may have gained parents.
	OnGain(f func())
	// RecordCounts publishes how many of a controller's parents this engine owns and how
	// many children those have; negative parents removes the controller.
	RecordCounts(controller string, parents, children int)
	// Totals is what every replica of the ring published for the controller, summed.
	Totals(controller string) (parents, children int)
}

// Manager runs the runners. Run is called once.
type Manager struct {
	opts  Options
	queue *fairshare.Queue[key]
	kinds []*kindSource
	ready atomic.Bool

	mu      sync.Mutex
	runners map[key]*running

	// libs watches the hook libraries (libraries.go).
	libs libraryWatch
}

// buildWorkers are the goroutines that build controllers (compile their hooks, resolve the
// libraries they load) and libraries, taking keys from the queue in turn by tenant, each
// tenant holding at most its share of them (fairshare.Queue): a tenant alone builds on two,
// and leaves the third to the next tenant that comes. A build runs on its worker, outside the
// cores inline hook calls share (fairshare.Cores): no more than this many builds burn CPU at
// once, and no more than two of one tenant.
const buildWorkers = 3

// key names one controller resource (its kind's index in Manager.kinds and its name), or,
// with kind libraryKey, one hook library (its cache key: NAME, or NAMESPACE/NAME).
type key struct {
	kind int
	name string
}

// libraryKey is the kind of a key that names a hook library.
const libraryKey = -1

type kindSource struct {
	*reconcile.Descriptor
	informer *informers.Informer
}

type running struct {
	// uid and generation identify what this entry was built from: a controller deleted and
	// created again under the same name is a new controller even at the same generation.
	uid        types.UID
	generation int64
	runner     *reconcile.Runner
	built      *built
	capped     []string
	// failed holds why no runner runs for this generation, if so, and st the status that says
	// it (written again by the refresh when sharded: the member that wrote it may change).
	failed error
	st     status
	// retry is set when the failure may mend itself (a resource not served yet).
	retry bool
	// rollout is how a change of the hooks reaches the parents (spec.hookRollout); nil
	// without a policy. While it is staged, a driver advances it until stopDrive.
	rollout   *rollout.Rollout
	stopDrive func()
	// libs are the libraries the hooks named when this entry was built, with the revision
	// each had ("" for none), in the scope of libNamespace; libraryErr is why a rebuild for
	// a library change failed while runner kept running (libraries.go).
	libs         map[string]string
	libNamespace string
	libraryErr   error
	// checks are what the controller's account was asked about: the objects its
	// configuration names, which the runner was built from or which were refused
	// (ReferenceRefused); none without an account. recheck is set when asking again changed
	// the answer: the next sync builds the controller again (references.go).
	checks  []referenceCheck
	recheck atomic.Bool
}

// New returns a Manager.
func New(opts Options) *Manager {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 10 * time.Second
	}
	if opts.TenantWebhooks == nil {
		opts.TenantWebhooks = &hooks.Egress{Setting: TenantWebhookAllowFlag}
	}
	m := &Manager{opts: opts, runners: map[key]*running{}}
	for _, d := range kinds.All {
		m.kinds = append(m.kinds, &kindSource{Descriptor: d})
	}
	return m
}

// Ready reports whether the controller resources have been listed and each acted on once.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Run watches controller resources until ctx ends, then stops every runner, letting
// in-flight reconciles finish, and returns.
func (m *Manager) Run(ctx context.Context) error {
	m.queue = fairshare.NewQueue(fairshare.QueueConfig[key]{FlowOf: m.flowOf, Workers: buildWorkers,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[key](time.Second, time.Minute),
		Name:        "controllers", Metrics: m.opts.Metrics.WorkQueue()})
	libSynced, stopLibs, err := m.watchLibraries(ctx)
	if err != nil {
		return err
	}
	defer stopLibs()
	var synced []cache.InformerSynced
	for i, k := range m.kinds {
		k.informer = m.opts.Informers.Acquire(k.Resource)
		defer m.opts.Informers.Release(k.informer)
		enqueue := func(obj any) {
			if name, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				m.queue.Add(key{kind: i, name: name})
			}
		}
		reg, err := k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, cur any) { enqueue(cur) },
			DeleteFunc: enqueue,
		})
		if err != nil {
			return err
		}
		defer k.informer.RemoveEventHandler(reg)
		synced = append(synced, k.informer.HasSynced)
	}
	// Each kind's controllers start as their informer delivers them: a kind whose watch is
	// slow to open (a custom resource's watch cache is built on the first request) holds up
	// no other. Ready waits for every kind's initial list and as many syncs.
	var done, initial atomic.Int64
	initial.Store(-1) // unknown until every kind has listed
	checkReady := func() {
		if n := initial.Load(); n >= 0 && done.Load() >= n {
			m.ready.Store(true)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !informers.WaitSynced(ctx, synced...) {
			return
		}
		n := 0
		for _, k := range m.kinds {
			n += len(k.informer.Indexer().ListKeys())
		}
		initial.Store(int64(n))
		checkReady()
	}()
	for range buildWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A controller is built once the libraries its hooks may load are known.
			informers.WaitSynced(ctx, libSynced...)
			for {
				k, quit := m.queue.Get()
				if quit {
					return
				}
				if k.kind == libraryKey {
					if err := m.syncLibrary(ctx, k.name); err != nil {
						m.opts.Log.Info("library status not written; retrying", "library", k.name, "error", err.Error())
						m.queue.AddRateLimited(k)
					} else {
						m.queue.Forget(k)
					}
					m.queue.Done(k)
					continue
				}
				if err := m.sync(ctx, k); err != nil {
					m.opts.Log.Error("controller resource not synced; retrying", "controller", m.ref(k), "error", err.Error())
					m.queue.AddRateLimited(k)
				} else {
					m.queue.Forget(k)
				}
				m.queue.Done(k)
				done.Add(1)
				checkReady()
			}
		}()
	}
	if sh := m.opts.Shard; sh != nil {
		// Events that came while the ring changed were dropped: enqueue every parent again.
		sh.OnGain(m.resyncAll)
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
	for k, r := range m.runners {
		if r.stopDrive != nil {
			r.stopDrive()
		}
		if r.runner != nil {
			r.runner.Stop()
			m.opts.Metrics.Controllers.WithLabelValues("running").Dec()
		} else {
			m.opts.Metrics.Controllers.WithLabelValues("failed").Dec()
		}
		delete(m.runners, k)
	}
	return nil
}

// resyncAll enqueues every parent of every running controller, and every hook library
// (whose status this replica may write now).
func (m *Manager) resyncAll() {
	for _, inf := range []*informers.Informer{m.libs.cluster, m.libs.namespaced} {
		for _, k := range inf.Indexer().ListKeys() {
			m.queue.Add(key{kind: libraryKey, name: k})
		}
	}
	m.mu.Lock()
	var rs []*reconcile.Runner
	for _, r := range m.runners {
		if r.runner != nil {
			rs = append(rs, r.runner)
		}
	}
	m.mu.Unlock()
	for _, r := range rs {
		r.Resync()
	}
}

// ref names a controller in logs: compositecontroller/NAME.
func (m *Manager) ref(k key) string { return m.kinds[k.kind].Ref(k.name) }

// flowOf is whom the queue serves key k as: the tenant of the controller it names
// (fairshare.TenantOf), or for a library the library's own tenant, its namespace, or for a
// cluster HookLibrary the library itself, as a cluster-scoped controller is.
func (m *Manager) flowOf(k key) fairshare.Flow {
	ns, _, _ := cache.SplitMetaNamespaceKey(k.name)
	ref := libraryRef(k.name)
	if k.kind != libraryKey {
		ref = m.ref(k)
	}
	return fairshare.Flow{Tenant: fairshare.TenantOf(ns, ref), Controller: ref}
}

// sync makes the runner of one controller match its current generation.
func (m *Manager) sync(ctx context.Context, k key) error {
	ks := m.kinds[k.kind]
	obj, exists, err := ks.informer.Indexer().GetByKey(k.name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	cur := m.runners[k]
	m.mu.Unlock()
	if !exists {
		if cur != nil {
			m.stop(k, cur)
			m.opts.Log.Info("controller stopped", "controller", m.ref(k))
		}
		return nil
	}
	u := obj.(*unstructured.Unstructured)
	if u.GetDeletionTimestamp() != nil {
		return m.remove(ctx, k, u, cur)
	}
	sameGeneration := cur != nil && cur.uid == u.GetUID() && cur.generation == u.GetGeneration()
	if sameGeneration && !cur.retry && !cur.recheck.Load() && !m.librariesChanged(cur) {
		if cur.runner != nil {
			return m.holdController(ctx, k, u, true) // a controller started before the engine held one
		}
		return nil
	}
	libs := m.librariesFor(u.GetNamespace())
	b, err := m.build(ctx, ks.Descriptor, u, libs)
	m.opts.Metrics.ControllerBuilds.WithLabelValues(m.ref(k)).Inc()
	if err != nil {
		var be *buildError
		if !errors.As(err, &be) {
			be = &buildError{reason: "InvalidSpec", err: err}
		}
		if sameGeneration && cur.runner != nil && be.hooks {
			// Only a library changed: the controller keeps its last good hooks.
			return m.libraryFailure(ctx, k, u, cur, libs.names(), be.err)
		}
		defer func() {
			m.mu.Lock()
			if run := m.runners[k]; run != nil {
				run.libs, run.libNamespace = libs.names(), u.GetNamespace()
			}
			m.mu.Unlock()
			m.indexLibraries(k, u.GetNamespace(), libs.names())
		}()
		if be.retry {
			// A CRD may be installed later: retry, and say so meanwhile.
			_ = m.fail(ctx, k, u, cur, be)
			m.mu.Lock()
			m.runners[k].retry = true
			m.mu.Unlock()
			return be.err
		}
		return m.fail(ctx, k, u, cur, be)
	}
	// Hold the informers across the swap so that replacing a runner does not re-list
	// every resource it watches.
	held := m.hold(b.runner.Scopes())
	defer m.release(held)
	ro := m.stage(ctx, u, b, cur)
	if cur != nil {
		m.stop(k, cur)
	}
	if err := b.runner.Start(ctx); err != nil {
		b.close()
		return err
	}
	run := &running{uid: u.GetUID(), generation: u.GetGeneration(), runner: b.runner, built: b, capped: b.capped, rollout: ro,
		libs: libs.names(), libNamespace: u.GetNamespace(), checks: b.referenceChecks()}
	m.indexLibraries(k, u.GetNamespace(), run.libs)
	if ro != nil && ro.Staged() {
		driveCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.drive(driveCtx, k, run)
		}()
		run.stopDrive = func() { cancel(); <-done }
	}
	m.mu.Lock()
	m.runners[k] = run
	m.mu.Unlock()
	m.opts.Metrics.Controllers.WithLabelValues("running").Inc()
	m.opts.Log.Info("controller started", "controller", m.ref(k), "generation", u.GetGeneration())
	for _, c := range b.capped {
		m.opts.Recorder.Event(u, corev1.EventTypeWarning, "BudgetCapped", c)
	}
	if err := m.holdController(ctx, k, u, true); err != nil {
		return err
	}
	return m.writeStatus(ctx, k, u, m.statusOK(k, run))
}

// hold takes a reference on the informers of the given scopes; release returns them.
func (m *Manager) hold(scopes []informers.Scope) []*informers.Informer {
	var held []*informers.Informer
	for _, s := range scopes {
		held = append(held, m.opts.Informers.Hold(s))
	}
	return held
}

func (m *Manager) release(held []*informers.Informer) {
	for _, inf := range held {
		m.opts.Informers.Unhold(inf)
	}
}

func (m *Manager) stop(k key, cur *running) {
	if cur.stopDrive != nil {
		cur.stopDrive()
	}
	if cur.runner != nil {
		cur.runner.Stop()
		cur.built.close()
		if sh := m.opts.Shard; sh != nil {
			sh.RecordCounts(m.ref(k), -1, 0)
		}
		m.opts.Metrics.Controllers.WithLabelValues("running").Dec()
	} else {
		m.opts.Metrics.Controllers.WithLabelValues("failed").Dec()
	}
	m.mu.Lock()
	delete(m.runners, k)
	m.mu.Unlock()
	m.indexLibraries(k, "", nil)
}

// fail records that this generation of the controller does not run, in its status and in an
// Event. It returns nil for failures that a retry cannot mend.
func (m *Manager) fail(ctx context.Context, k key, u *unstructured.Unstructured, cur *running, be *buildError) error {
	// A rollout's state outlives a generation that does not build: the next that does goes
	// on from it, and its status keeps the previous hooks.
	var ro *rollout.Rollout
	kept := statusRollout(u)
	if cur != nil && cur.uid == u.GetUID() && cur.rollout != nil {
		ro = cur.rollout
		st := ro.Status()
		kept = &st
	}
	if cur != nil {
		m.stop(k, cur)
	}
	st := status{ready: metav1.ConditionFalse, readyReason: be.reason, readyMsg: be.err.Error(),
		compiled: metav1.ConditionTrue, compiledReason: "Compiled", compiledMsg: "every hook compiled", members: m.members(),
		rollout: kept}
	if be.hooks {
		st.compiled, st.compiledReason, st.compiledMsg = metav1.ConditionFalse, be.reason, be.err.Error()
	}
	m.mu.Lock()
	m.runners[k] = &running{uid: u.GetUID(), generation: u.GetGeneration(), failed: be.err, st: st, rollout: ro, checks: be.recheck}
	m.mu.Unlock()
	m.opts.Metrics.Controllers.WithLabelValues("failed").Inc()
	m.opts.Recorder.Event(u, corev1.EventTypeWarning, be.reason, be.err.Error())
	m.opts.Log.Error("controller cannot run", "controller", m.ref(k), "reason", be.reason, "error", be.err.Error())
	return m.writeStatus(ctx, k, u, st)
}
