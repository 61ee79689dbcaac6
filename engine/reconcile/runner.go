package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/fairshare"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/related"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/shard"
	"metascript.dev/metascript/engine/trace"
)

// Env is what every controller's Runner shares with the engine.
type Env struct {
	// Client makes every write for the controller: the engine's, or one impersonating the
	// controller's account.
	Client dynamic.Interface
	// EngineClient, when set, is the engine's own client, for the one write Client cannot
	// make of a controller being removed: its finalizer on a parent, once the account may no
	// longer remove it (releaseAsEngine). Unset, that finalizer stays.
	EngineClient dynamic.Interface
	Informers    *informers.Factory
	// Recorder records the Events the engine makes for the controller (refused reads and
	// writes, failed hooks); HookEvents, when set, those its hooks ask for (Outcome.Events),
	// and Recorder records them otherwise.
	Recorder   record.EventRecorder
	HookEvents record.EventRecorder
	Metrics    *metrics.Metrics
	Log        *slog.Logger
	// Resolver resolves the resources customize hooks name.
	Resolver related.Resolver
	// Workers reconcile parents concurrently, per controller; at least 1.
	Workers int
	// HookCalls, when positive, bounds the controller's hook calls at once, whatever its
	// workers and its calls that stand alone (a MapController's map calls) would make.
	HookCalls int
	// Cores, when set, are the slots of inline (Starlark and JavaScript) hook calls every
	// controller of the engine shares: a call holds one while it runs, and a tenant holds no
	// more than its fair share while others call, burning calls in a lane of their own (see
	// invoke.go and fairshare.Cores).
	Cores *fairshare.Cores
	// Seats, when set, are the concurrent reconciles every controller of the engine shares:
	// a worker holds one for each reconcile, except while it waits on a webhook, and a tenant
	// holds no more than its fair share while others reconcile. Unset, a controller's workers
	// bound its reconciles alone.
	Seats *fairshare.Slots
	// Reads, when set, says what the controller's account may read: nothing it may not read
	// is handed to its hooks. Unset, the controller reads what the engine reads.
	Reads Reads
	// Shard, when set, is the engine's place in a ring of replicas sharing the work
	// (engine/shard): the runner reconciles only the parents it owns. Unset, every parent.
	Shard Shard
	// Clock, when set, is the time conditions are stamped with; unset, time.Now. The
	// offline commands fix it so that their output repeats.
	Clock func() time.Time
	// Trace, when set, records each reconcile: what triggered it, its hook calls and its
	// writes (engine/trace).
	Trace *trace.Recorder
	// RevisionNamespace holds the rollout revisions of cluster-scoped parents; empty, their
	// children cannot roll (a namespaced parent's revisions live in its namespace).
	// DefaultRevisionNamespace is the install's.
	RevisionNamespace string
}

// Shard says which parents this engine reconciles, by a key naming the controller and the
// parent (ShardKey). *shard.Member is one.
type Shard interface {
	// Owns reports whether the engine may reconcile the parent now.
	Owns(key string) bool
	// Begin starts a reconcile of the parent if the engine may reconcile it now; end is
	// called once the reconcile has returned.
	Begin(key string) (end func(), ok bool)
}

// Reads answers whether a controller's account may read a resource in a namespace (every
// namespace when empty); *identity.Account is one. Its error is the refusal, or why it
// could not be asked.
type Reads interface {
	MayRead(ctx context.Context, verb string, resource schema.GroupVersionResource, namespace string) error
}

// Config is what a kind's Configure makes of a controller's spec for its Runner; the rest
// (name, hooks, field manager) the Runner takes from the Built controller.
type Config struct {
	Env
	Kind     Kind
	Parents  []ParentResource
	Children []protocol.ChildRule
	// Watches are how events beyond the parents' and their children's reach parents.
	Watches Watches
	// ResyncPeriod, when positive, enqueues every parent that often.
	ResyncPeriod time.Duration
}

// The sources below hold the informer a runner reads, and its indexer: where every reconcile
// reads observed state. Offline (Observe) the indexer is set and the informer is not.

type parentSource struct {
	ParentResource
	informer *informers.Informer
	indexer  cache.Indexer
	shard    string // ShardKey's prefix for this resource's parents, made once
}

type childSource struct {
	protocol.ChildRule
	informer *informers.Informer
	indexer  cache.Indexer
	sub      *childSub // its subscription to the informer's router
	router   *router
}

// relatedSource is where a runner gets the objects a customize hook relates to a parent:
// a *related.Tracker in the engine, a *related.Fixed offline.
type relatedSource interface {
	Rules(parent *unstructured.Unstructured, revision string, ask func() (map[string]any, error)) ([]related.Rule, error)
	Objects(ctx context.Context, parent *unstructured.Unstructured, rules []related.Rule) (map[string]any, error)
	Bind(req Request, rules []related.Rule)
	Forget(req Request, uid types.UID)
	Stop()
}

// Runner reconciles the parents of one controller. Start and Stop are called once each.
type Runner struct {
	cfg   Config
	built *Built
	// name is the controller as logs and metrics name it (compositecontroller/NAME);
	// primary its kind's primary hook; finalizer the finalizer it holds on parents.
	name, primary, finalizer string
	// flow is the controller and its tenant, as the shared seats and cores know them.
	flow fairshare.Flow
	// fieldManager is the field manager of every write made for the controller.
	fieldManager string

	parents     []parentSource
	children    []childSource
	inputs      []*informers.Informer
	inputCaches []cache.Indexer // the inputs' indexers, by index of Watches.Inputs
	apply       *apply.Applier
	queue       workqueue.TypedRateLimitingInterface[Request]
	unsubscribe []func() // from the routers, in releaseAll
	cancel      context.CancelFunc
	workers     sync.WaitGroup
	background  sync.WaitGroup
	stopping    atomic.Bool
	calls       chan struct{}           // a slot per hook call in progress; nil: no bound
	released    atomic.Bool             // releaseAll ran
	removing    atomic.Pointer[removal] // set by Remove
	related     relatedSource           // nil without a customize hook
	overlay     *writtenOverlay
	hookEvents  eventLimiter
	// failureEvents is the rate of the Events the engine records about failures (event).
	failureEvents *rate.Limiter
	triggers      sync.Map // Request → what enqueued it last, for the trace; used with Env.Trace only

	// program is the controller's hooks; previous and staging are set by Stage while a
	// change of them rolls out (program.go).
	program, previous *Program
	staging           Staging

	// What the child informers read beyond the children of the parents: orphans the parents
	// may adopt, and names held by objects they would not cache (childneed.go). Under needMu.
	needMu  sync.Mutex
	orphans informers.Orphans
	names   []string

	countsMu sync.Mutex
	selected map[Request]bool // parents the controller selects, kept by their events
	counts   map[Request]int  // parent → claimed children after its last reconcile
	claimed  int              // the sum of counts
}

// New returns the Runner of controller b, configured by its kind as cfg, not started yet.
// b's hooks are the hooks the Runner calls: its kind's primary hook is required; with a
// customize hook, the Runner asks it which related objects each parent's hooks see
// (Gathered.Related), keyed as the primary hook's version asks.
func New(b *Built, cfg Config) (*Runner, error) {
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	name := b.Descriptor.Ref(b.Key())
	primary := b.Descriptor.Primary().Name
	if b.Hooks[primary] == nil {
		return nil, fmt.Errorf("%s: no %s hook", name, primary)
	}
	if len(cfg.Parents) == 0 {
		return nil, fmt.Errorf("%s: no parent resource", name)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Log = cfg.Log.With("controller", name)
	if b.Namespace != "" {
		if err := confineResources(b); err != nil {
			return nil, err
		}
	}
	if b.Hooks["customize"] != nil && cfg.Resolver == nil {
		return nil, fmt.Errorf("%s: a customize hook needs a resolver", name)
	}
	r := &Runner{cfg: cfg, built: b, calls: callSlots(cfg.HookCalls), name: name, primary: primary, finalizer: b.Descriptor.FinalizerPrefix + b.Name,
		fieldManager: b.FieldManager(), counts: map[Request]int{}, selected: map[Request]bool{}, apply: apply.NewWithManager(cfg.Client, b.FieldManager()),
		overlay: newWrittenOverlay(), program: &Program{Hooks: b.Hooks},
		flow:          fairshare.ControllerFlow(b.Namespace, name),
		failureEvents: rate.NewLimiter(failureEventRate, failureEventBurst)}
	if b.Hooks["customize"] != nil {
		r.related = related.New(cfg.Informers, b.Namespace, cfg.Resolver, HookVersion(b.Declared.Hooks[primary]), RelatedReach(b),
			func(req Request) { r.enqueue("related object", []Request{req}) })
	}
	for _, p := range cfg.Parents {
		r.parents = append(r.parents, parentSource{ParentResource: p, shard: shard.Key(p.GVK.GroupKind(), "")})
	}
	for _, c := range cfg.Children {
		r.children = append(r.children, childSource{ChildRule: c})
	}
	return r, nil
}

// Start acquires the informers, registers indexes and event handlers, waits for the caches
// to sync (or ctx to end) and starts the workers. It returns once workers run.
func (r *Runner) Start(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(ctx)
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[Request](),
		workqueue.TypedRateLimitingQueueConfig[Request]{Name: r.name,
			DelayingQueue: newTimerQueue[Request](r.name, r.cfg.Metrics.WorkQueue())})
	var synced []cache.InformerSynced
	fail := func(err error) error {
		r.releaseAll()
		return err
	}
	for i := range r.parents {
		inf := r.cfg.Informers.AcquireFor(r.scope(r.parents[i].GVR), r.parentNeed(i))
		r.parents[i].informer, r.parents[i].indexer = inf, inf.Indexer()
		if r.cfg.Watches.ParentIndexes != nil {
			if err := r.cfg.Watches.ParentIndexes(inf); err != nil {
				return fail(err)
			}
		}
		synced = append(synced, inf.HasSynced)
	}
	if !r.readOrphans(ctx, synced) {
		return fail(fmt.Errorf("caches of %s did not sync: %w", r.name, ctx.Err()))
	}
	for i := range r.children {
		inf := r.cfg.Informers.AcquireFor(r.scope(r.children[i].GVR), r.childNeed())
		r.children[i].informer, r.children[i].indexer = inf, inf.Indexer()
		if err := index.RegisterChildIndexes(inf); err != nil {
			return fail(err)
		}
		synced = append(synced, inf.HasSynced)
	}
	for _, in := range r.cfg.Watches.Inputs {
		inf := r.cfg.Informers.AcquireFor(r.scope(in.GVR), informers.Need{})
		r.inputs = append(r.inputs, inf)
		r.inputCaches = append(r.inputCaches, inf.Indexer())
		// An input may be owned by the parent (a rollout's revisions): found by owner.
		if err := index.RegisterChildIndexes(inf); err != nil {
			return fail(err)
		}
		synced = append(synced, inf.HasSynced)
	}
	if err := r.subscribe(); err != nil {
		return fail(err)
	}
	if !informers.WaitSynced(ctx, synced...) {
		return fail(fmt.Errorf("caches of %s did not sync: %w", r.name, ctx.Err()))
	}
	r.workers.Add(1)
	go func() {
		defer r.workers.Done()
		r.dispatch(ctx)
	}()
	if r.cfg.ResyncPeriod > 0 {
		r.background.Add(1)
		go func() {
			defer r.background.Done()
			r.resyncEvery(ctx, r.cfg.ResyncPeriod)
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
	if r.related != nil {
		r.related.Stop()
	}
}

// releaseAll removes the event handlers and releases the informers, once. It leaves the
// informer fields as they are: a handler already running when it was removed (client-go does
// not wait for one) and Counts still read them, and a released informer's cache stays
// readable.
func (r *Runner) releaseAll() {
	if !r.released.CompareAndSwap(false, true) {
		return
	}
	for _, unsubscribe := range r.unsubscribe {
		unsubscribe()
	}
	for i := range r.parents {
		if r.parents[i].informer != nil {
			r.cfg.Informers.ReleaseFor(r.parents[i].informer, r.parentNeed(i))
		}
	}
	for i := range r.children {
		if r.children[i].informer != nil {
			r.cfg.Informers.ReleaseFor(r.children[i].informer, r.childNeed())
		}
	}
	for _, inf := range r.inputs {
		r.cfg.Informers.ReleaseFor(inf, informers.Need{})
	}
}

// subscribe subscribes the runner's handlers to the routers of its informers: inputs,
// parents, then children, whose owners' routers the child subscriptions name.
func (r *Runner) subscribe() error {
	for i, inf := range r.inputs {
		rt, err := routerOf(inf)
		if err != nil {
			return err
		}
		s := &inputSub{h: r.inputHandler(r.cfg.Watches.Inputs[i].Map)}
		rt.subscribeInput(s)
		r.unsubscribe = append(r.unsubscribe, func() { rt.unsubscribeInput(s) })
	}
	var owners []ownerRoute
	for i, p := range r.parents {
		rt, err := routerOf(p.informer)
		if err != nil {
			return err
		}
		s := &parentSub{r: r, h: r.parentHandler(i), ns: r.built.Namespace, final: r.finalizer}
		if k, ok := r.cfg.Kind.(LabelSelected); ok {
			s.labels = selectorLabels(k.ParentSelector(i))
		}
		if err := rt.subscribeParent(s); err != nil {
			return err
		}
		r.unsubscribe = append(r.unsubscribe, func() { rt.unsubscribeParent(s) })
		owners = append(owners, ownerRoute{gk: p.GVK.GroupKind(), namespaced: p.Namespaced, parents: rt})
	}
	for i := range r.children {
		rt, err := routerOf(r.children[i].informer)
		if err != nil {
			return err
		}
		s := &childSub{r: r, rule: i, h: r.childHandler(i), owners: owners, adopts: r.cfg.Watches.Orphans != nil}
		rt.subscribeChild(s)
		r.children[i].sub = s
		r.children[i].router = rt
		r.unsubscribe = append(r.unsubscribe, func() { rt.unsubscribeChild(s) })
	}
	return nil
}

// waitFor records that parent req wants the name of child rule's object namespace/name,
// which another object holds: that object's deletion reaches the runner.
func (r *Runner) waitFor(rule int, namespace, name string, req Request) {
	r.overlay.waitFor(rule, namespace, name, req)
	if c := r.children[rule]; c.router != nil {
		c.router.wait(c.sub, namespace, name)
	}
}

// Counts returns how many parents the controller selects and how many children they
// claimed at their last reconcile. Both are kept up to date by the runner's own events and
// reconciles, so that asking costs nothing however many parents the informer caches.
func (r *Runner) Counts() (parents, children int) {
	r.countsMu.Lock()
	defer r.countsMu.Unlock()
	return len(r.selected), r.claimed
}

// ShardCounts returns, for an engine sharing the work with other replicas, how many of the
// parents the controller selects this engine owns, and how many children those own,
// counted from the caches (the claimed counts of Counts cover reconciled parents only). It
// looks up every selected parent: the status refresh calls it, never an event path.
func (r *Runner) ShardCounts() (owned, children int) {
	r.countsMu.Lock()
	reqs := make([]Request, 0, len(r.selected))
	for req := range r.selected {
		reqs = append(reqs, req)
	}
	r.countsMu.Unlock()
	seen := map[*informers.Informer]bool{}
	var childCaches []cache.Indexer
	for _, c := range r.children {
		if c.informer != nil && !seen[c.informer] {
			seen[c.informer] = true
			childCaches = append(childCaches, c.informer.Indexer())
		}
	}
	for _, req := range reqs {
		if sh := r.cfg.Shard; sh != nil && !sh.Owns(r.shardKey(req)) {
			continue
		}
		owned++
		obj, exists, _ := r.parents[req.Resource].indexer.GetByKey(req.Key)
		if !exists {
			continue
		}
		uid := string(obj.(*unstructured.Unstructured).GetUID())
		for _, idx := range childCaches {
			keys, _ := idx.IndexKeys(index.ControllerUID, uid)
			labelled, _ := idx.IndexKeys(index.ParentUID, uid) // children beyond its namespace
			children += len(keys) + len(labelled)
		}
	}
	return owned, children
}

// setSelected records whether the controller selects the parent of req.
func (r *Runner) setSelected(req Request, selected bool) {
	r.countsMu.Lock()
	defer r.countsMu.Unlock()
	if selected {
		r.selected[req] = true
		return
	}
	delete(r.selected, req)
	r.claimed -= r.counts[req]
	delete(r.counts, req)
}

func (r *Runner) setCount(req Request, n int, forget bool) {
	r.countsMu.Lock()
	defer r.countsMu.Unlock()
	r.claimed -= r.counts[req]
	if forget {
		delete(r.counts, req)
		return
	}
	r.counts[req] = n
	r.claimed += n
}

// dispatch takes requests off the queue until it shuts down and processes each, at most
// cfg.Workers at once (serveQueue).
func (r *Runner) dispatch(ctx context.Context) {
	serveQueue(r.queue, r.cfg.Workers, &r.workers, func(req Request) { r.process(ctx, req) })
}

// process reconciles one request taken off the queue and marks it done, requeueing it as the
// outcome asks.
func (r *Runner) process(ctx context.Context, req Request) {
	defer r.queue.Done(req)
	if r.stopping.Load() {
		return
	}
	if sh := r.cfg.Shard; sh != nil {
		end, ok := sh.Begin(r.shardKey(req))
		if !ok {
			r.queue.Forget(req) // another member's, or the ring is changing: enqueued again if it becomes ours
			return
		}
		defer end()
	}
	if r.childrenCatchingUp() {
		r.queue.AddAfter(req, catchUpDelay) // an orphan to adopt may not be cached yet
		return
	}
	if seats := r.cfg.Seats; seats != nil {
		seat := &seat{seats: seats, flow: r.flow}
		if err := seat.take(ctx); err != nil {
			return // stopping: ctx ended while waiting for a seat
		}
		defer seat.give()
		ctx = withSeat(ctx, seat)
	}
	ctx = fairshare.WithFlow(ctx, r.flow) // its requests draw on the engine's rate as its tenant's
	holdings := &fairshare.Holdings{}     // what its webhooks' answers take, until it ends
	defer holdings.Release()
	ctx = fairshare.WithHoldings(ctx, holdings)
	span := r.cfg.Trace.Begin(r.name, req.Key, r.takeTrigger(req))
	start := time.Now()
	resyncAfter, err := r.reconcile(trace.WithSpan(ctx, span), req)
	span.End(err)
	r.cfg.Metrics.ReconcileDuration.WithLabelValues(r.name).Observe(time.Since(start).Seconds())
	if err != nil {
		r.cfg.Metrics.Reconciles.WithLabelValues(r.name, "error").Inc()
		var later *hooks.RetryAfterError
		if errors.As(err, &later) {
			// The webhook said when to call again: that is the delay, not the backoff.
			r.cfg.Log.Info("reconcile deferred; the webhook asked to be called later", "parent", req.Key,
				"after", later.After.String(), "error", err.Error())
			r.queue.Forget(req)
			r.setTrigger(req, "webhook Retry-After")
			r.queue.AddAfter(req, later.After)
			return
		}
		r.cfg.Log.Info("reconcile failed; retrying with backoff", "parent", req.Key, "error", err.Error())
		r.setTrigger(req, "retry")
		r.queue.AddRateLimited(req)
		return
	}
	r.cfg.Metrics.Reconciles.WithLabelValues(r.name, "success").Inc()
	r.queue.Forget(req)
	if resyncAfter > 0 {
		r.setTrigger(req, "resyncAfterSeconds")
		r.queue.AddAfter(req, resyncAfter)
	}
}

func (r *Runner) resyncEvery(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Resync()
		}
	}
}

// Resync enqueues every cached parent, as each tick of the resync period does, but those
// whose last reconcile failed: their retry is due at its backoff already, and a resync that
// ran them sooner would let a controller whose hooks fail set its own pace (a short period
// on many parents) however long the backoff grows. It is safe for concurrent use once
// Start has returned.
func (r *Runner) Resync() {
	for i := range r.parents {
		keys := r.parentKeys(i)
		reqs := make([]Request, 0, len(keys))
		for _, key := range keys {
			if req := (Request{Resource: i, Key: key}); r.queue.NumRequeues(req) == 0 {
				reqs = append(reqs, req)
			}
		}
		r.enqueue("resync", reqs)
	}
}

// setTrigger records what enqueued req, for the trace; the last one before the reconcile
// names it.
func (r *Runner) setTrigger(req Request, trigger string) {
	if r.cfg.Trace != nil {
		r.triggers.Store(req, trigger)
	}
}

// takeTrigger returns what enqueued req last, and forgets it.
func (r *Runner) takeTrigger(req Request) string {
	if r.cfg.Trace == nil {
		return ""
	}
	t, _ := r.triggers.LoadAndDelete(req)
	s, _ := t.(string)
	return s
}

// scope is where the runner's informer of gvr watches: the namespace of a confined controller
// (a namespaced kind's), every namespace otherwise. Every informer of a confined controller
// is of that namespace, shared with the other controllers confined to it, so that the engine
// caches, of a resource only tenants use, the namespaces they run in.
func (r *Runner) scope(gvr schema.GroupVersionResource) informers.Scope {
	return informers.Scope{GVR: gvr, Namespace: r.built.Namespace}
}

// Scopes are the scopes of the informers Start acquires: of its parent, child and input
// resources, each once. Related resources are not among them: they follow the customize
// answers.
func (r *Runner) Scopes() []informers.Scope {
	var out []informers.Scope
	add := func(gvr schema.GroupVersionResource) {
		if s := r.scope(gvr); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, p := range r.parents {
		add(p.GVR)
	}
	for _, c := range r.children {
		add(c.GVR)
	}
	for _, in := range r.cfg.Watches.Inputs {
		add(in.GVR)
	}
	return out
}

// parentNeed is what the runner reads of its i-th parent resource: the parents this replica
// owns (engine/informers caches only those when the engine shares its parents).
func (r *Runner) parentNeed(i int) informers.Need {
	return informers.Need{Parents: r.parents[i].GVK.GroupKind()}
}

// childNeed is what the runner reads of its child resources now: the children of the parents
// this replica owns, the orphans its parents may adopt, and names its parents want that
// other objects hold. Inputs are read whole: they are
// nobody's children.
func (r *Runner) childNeed() informers.Need {
	r.needMu.Lock()
	defer r.needMu.Unlock()
	return r.childNeedFor(r.orphans, r.names)
}

// childNeedFor is childNeed when the child informers read orphans o and the objects names.
func (r *Runner) childNeedFor(o informers.Orphans, names []string) informers.Need {
	owners := make([]resources.Resource, len(r.parents))
	for i, p := range r.parents {
		owners[i] = p.Resource
	}
	return informers.Need{Owners: owners, Orphans: o, Names: names}
}

// now is the time conditions are stamped with (Env.Clock).
func (r *Runner) now() time.Time {
	if r.cfg.Clock != nil {
		return r.cfg.Clock()
	}
	return time.Now()
}

// DefaultRevisionNamespace is the namespace the install runs the engine in, where it keeps
// the revisions of cluster-scoped parents unless told otherwise; offline commands take an
// engine to use it.
const DefaultRevisionNamespace = "metascript-system"

// shardKey is ShardKey of req's parent, on the event path: one concatenation.
func (r *Runner) shardKey(req Request) string { return r.parents[req.Resource].shard + req.Key }
