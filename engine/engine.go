// Package engine wires the Metascript engine: API clients, the shared informer factory, the
// discovery resolver, the scripting runtime with both language adapters, Events, metrics and
// the controller manager. The command `metascript run` and the test suites both start the
// engine through New and Run, so they run the same thing.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"metascript.dev/metascript/engine/fairshare"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/manager"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/shard"
	"metascript.dev/metascript/engine/trace"
	"metascript.dev/metascript/engine/wire"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
	"metascript.dev/metascript/scripting/javascript"
	"metascript.dev/metascript/scripting/starlark"
)

// Options configure an Engine.
type Options struct {
	// Config reaches the API server. Its QPS and Burst are the rate of all the engine's
	// clients together, its own and those impersonating controllers' accounts, shared among
	// tenants (fairshare.Rate); a RateLimiter of its own is used as given instead.
	Config *rest.Config
	// Workers reconcile parents concurrently, per controller.
	Workers int
	// MaxReconciles bounds the reconciles of all controllers at once, shared fairly between
	// them (engine/fairshare); 0 leaves each controller bounded by its workers alone.
	MaxReconciles int
	// MaxHookCalls bounds each controller's hook calls at once; 0 for no bound.
	MaxHookCalls int
	// InlineCallSlots bounds the inline (Starlark and JavaScript) hook calls of all
	// controllers at once, each controller holding no more than its fair share of them while
	// others call (engine/fairshare Slots); 0 for GOMAXPROCS, negative for no bound.
	InlineCallSlots int
	// CacheSize bounds the compiled-program cache.
	CacheSize int
	// Defaults apply to hooks that set no budget; Ceilings cap what any controller asks for.
	Defaults, Ceilings scripting.Budget
	// WebhookCeiling, when positive, caps every webhook hook's timeout.
	WebhookCeiling time.Duration
	// MaxAnswerBytes, when positive, bounds one hook answer: an inline answer is refused as
	// it is converted once it passes this (the output budget's bytes, in Defaults and
	// Ceilings alike), a webhook's response body before it is read past it.
	MaxAnswerBytes int64
	// AnswerMemory, when positive, is the room, in bytes, that the webhook answers held by
	// reconciles in flight share, fairly among tenants (fairshare.Bytes): a webhook's body is
	// read only once there is room for it, and the room is held until its reconcile ends.
	// Inline answers need none: seats and cores bound how many are held at once.
	AnswerMemory int64
	// MaxSourceBytes, when positive, bounds the inline source of one controller's hooks,
	// its shared script included: a controller past it does not run (SourceTooLarge).
	MaxSourceBytes int64
	// StatusInterval is how often controller status counts are refreshed.
	StatusInterval time.Duration
	// RemovalGrace bounds the finalize hooks of a deleted controller (manager.Options).
	RemovalGrace time.Duration
	// RevisionNamespace holds the rollout revisions of cluster-scoped parents.
	RevisionNamespace string
	// NoTrace turns the record of recent reconciles off (Engine.Trace nil): for an engine
	// that serves no debug endpoint, which would keep it for nobody.
	NoTrace bool
	Log     *slog.Logger
	// Metrics defaults to a new registry.
	Metrics *metrics.Metrics
	// Shard, when set, shares the work with the engine's other replicas (engine/shard):
	// the engine reconciles, and caches, only its share of the parents.
	Shard Shard
	// TenantAccounts says which of its namespace's ServiceAccounts a namespaced controller
	// may act as (manager.Options); the zero value, its namespace's "default" only.
	TenantAccounts manager.TenantAccounts
	// TenantWebhooks is the policy namespaced controllers' webhooks are built under: where
	// they may connect (hooks.Egress); nil: the default one. They follow no redirect and
	// their errors quote no response body, whatever it says.
	TenantWebhooks *hooks.Egress
	// TenantWebhooksForAll holds cluster-scoped controllers' webhooks to the same policy.
	TenantWebhooksForAll bool
	// Isolated configures the isolated tier, which runs the inline hooks of controllers with
	// spec.isolation: Process in worker processes; Workers 0 runs none, and such controllers
	// are refused. Its budget policy (Defaults, Ceilings), metrics and log are the engine's.
	Isolated isolated.Options
}

// Engine is a configured, not yet running engine.
type Engine struct {
	Metrics *metrics.Metrics
	Runtime *scripting.Runtime
	// Trace records the recent reconciles of every controller (engine/trace); nil with
	// Options.NoTrace.
	Trace *trace.Recorder

	opts        Options
	isolated    *isolated.Pool // nil without an isolated tier
	broadcaster record.EventBroadcaster
	factory     *informers.Factory
	manager     *manager.Manager
}

// Shard is the engine's place in a ring of replicas sharing the work; *shard.Member is one.
type Shard interface {
	manager.Shard
	// ShareCaches hands the member the engine's informers, which cache only what its ring
	// gives it: it has them catch up with each view before reconciling under it.
	ShareCaches(shard.Caches)
}

// NewRuntime returns a scripting runtime with the Starlark and JavaScript adapters.
func NewRuntime(opts scripting.Options) *scripting.Runtime {
	return scripting.NewRuntime(opts, starlark.NewCompiler(), javascript.NewCompiler())
}

// New builds the engine's clients and components. Nothing runs until Run.
func New(opts Options) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	opts.Config = sharedRate(opts.Config)
	if opts.MaxAnswerBytes > 0 {
		opts.Defaults.MaxOutputBytes, opts.Ceilings.MaxOutputBytes = opts.MaxAnswerBytes, opts.MaxAnswerBytes
	}
	clients, err := wire.NewClients(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dyn := clients.Dynamic
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	e := &Engine{
		Metrics:     opts.Metrics,
		Runtime:     NewRuntime(scripting.Options{CacheSize: opts.CacheSize, Defaults: opts.Defaults, Ceilings: opts.Ceilings}),
		opts:        opts,
		broadcaster: record.NewBroadcaster(),
		factory:     informers.NewFactory(clients.Cache),
	}
	if !opts.NoTrace {
		e.Trace = trace.New()
	}
	if opts.Shard != nil {
		e.factory.ShareBy(opts.Shard.Leads)
		opts.Shard.ShareCaches(e.factory)
	}
	e.Metrics.WatchCaches(func() map[metrics.CacheScope]int { return cacheSizes(e.factory) })
	e.Metrics.WatchCompileCache(func() (uint64, uint64, uint64, int) {
		st := e.Runtime.Stats()
		return st.Hits, st.Misses, st.Evictions, st.Entries
	})
	var isolatedCompiler hooks.Compiler
	if opts.Isolated.Workers > 0 {
		if e.isolated, err = newIsolated(opts); err != nil {
			return nil, err
		}
		isolatedCompiler = e.isolated
	}
	sink := &eventSink{events: kube.CoreV1()}
	e.manager = manager.New(manager.Options{
		Dynamic:        dyn,
		Kube:           kube,
		Resolver:       resources.NewResolver(kube.Discovery()),
		Informers:      e.factory,
		Compiler:       e.Runtime,
		Isolated:       isolatedCompiler,
		Ceilings:       e.Runtime.Ceilings(),
		WebhookCeiling: opts.WebhookCeiling,
		MaxAnswerBytes: opts.MaxAnswerBytes,
		MaxSourceBytes: opts.MaxSourceBytes,
		AnswerMemory:   answerMemory(opts.AnswerMemory, opts.MaxAnswerBytes),
		Recorder:       e.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "metascript"}),
		Recorders:      func(f fairshare.Flow) record.EventRecorder { return sink.recorder(e.broadcaster, f) },
		Identities: &identity.Source{Config: opts.Config,
			Reviewer: identity.NewReviewer(kube.AuthorizationV1().SubjectAccessReviews())},
		Metrics:           opts.Metrics,
		Log:               opts.Log,
		Workers:           opts.Workers,
		Seats:             seats(opts.MaxReconciles),
		Cores:             cores(opts.InlineCallSlots),
		HookCalls:         opts.MaxHookCalls,
		StatusInterval:    opts.StatusInterval,
		RemovalGrace:      opts.RemovalGrace,
		RevisionNamespace: opts.RevisionNamespace,
		Trace:             e.Trace,
		Shard:             opts.Shard,

		TenantAccounts:       opts.TenantAccounts,
		TenantWebhooks:       opts.TenantWebhooks,
		TenantWebhooksForAll: opts.TenantWebhooksForAll,
	})
	e.broadcaster.StartRecordingToSink(sink)
	return e, nil
}

// sharedRate is cfg with one rate limiter for every client made from it or a copy of it:
// cfg's QPS and Burst (client-go's defaults when unset), shared fairly among tenants. A
// negative QPS, or a RateLimiter already set, is left as it is.
func sharedRate(cfg *rest.Config) *rest.Config {
	if cfg.RateLimiter != nil || cfg.QPS < 0 {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	cfg.RateLimiter = fairshare.NewRate(qps, burst)
	return cfg
}

// newIsolated starts the isolated tier's pool under the engine's budget policy.
func newIsolated(opts Options) (*isolated.Pool, error) {
	io := opts.Isolated
	io.Defaults, io.Ceilings, io.Log = opts.Defaults, opts.Ceilings, opts.Log
	io.Restarted = func(reason string) { opts.Metrics.IsolatedRestarts.WithLabelValues(reason).Inc() }
	io.Called = func(outcome string) { opts.Metrics.IsolatedCalls.WithLabelValues(outcome).Inc() }
	pool, err := isolated.New(io)
	if err != nil {
		return nil, fmt.Errorf("isolated tier: %w", err)
	}
	return pool, nil
}

// answerMemory is the room of n bytes for webhook answers, at least one answer of the
// largest size, or nil for none.
func answerMemory(n, largest int64) *fairshare.Bytes {
	if n <= 0 {
		return nil
	}
	if largest <= 0 {
		largest = hooks.DefaultMaxAnswer
	}
	return fairshare.NewBytes(max(n, largest))
}

// linger is how long a tenant that took a seat or a core keeps counting as active for the
// shares of the others: longer than the gaps between the reconciles and calls of a
// controller that is converging, so that a burning neighbour does not take its share back
// between two of them.
const linger = 5 * time.Second

// seats are the shared seats of n concurrent reconciles, or nil for none.
func seats(n int) *fairshare.Slots {
	if n <= 0 {
		return nil
	}
	return fairshare.NewSlots(n, linger)
}

// heavyQuantum is how long an inline hook call runs before it counts as burning (heavy): far
// beyond the few milliseconds even a thousand children's sync takes, so that only hooks
// that loop or compute for long are held to the heavy lane. heavyFor is how long a tenant
// whose call turned heavy stays so after its last heavy call.
const (
	heavyQuantum = 100 * time.Millisecond
	heavyFor     = time.Minute
)

// cores are the slots of n inline hook calls at once (GOMAXPROCS when 0), or nil for none.
func cores(n int) *fairshare.Cores {
	if n < 0 {
		return nil
	}
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return fairshare.NewCores(n, linger, heavyQuantum, heavyFor)
}

// Informers are the engine's shared informers: what it caches, for tests and diagnostics.
func (e *Engine) Informers() *informers.Factory { return e.factory }

// cacheSizes is f.Sizes as metascript_cache_objects labels them.
func cacheSizes(f *informers.Factory) map[metrics.CacheScope]int {
	sizes := f.Sizes()
	out := make(map[metrics.CacheScope]int, len(sizes))
	for s, n := range sizes {
		out[metrics.CacheScope{Resource: s.GVR.GroupResource().String(), Namespace: s.Namespace}] = n
	}
	return out
}

// Ready reports whether every controller resource has been acted on once.
func (e *Engine) Ready() bool { return e.manager.Ready() }

// Run runs the engine until ctx ends; then it stops taking work, lets in-flight reconciles
// finish, stops the informers, flushes Events and ends the isolated tier's workers. It is
// called once.
func (e *Engine) Run(ctx context.Context) error {
	if e.isolated != nil {
		defer e.isolated.Close()
	}
	defer e.broadcaster.Shutdown()
	defer e.factory.Shutdown()
	return e.manager.Run(ctx)
}
