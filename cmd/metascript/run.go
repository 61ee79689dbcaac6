package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/kinds"
	enginemetrics "metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/trace"
)

// engineFlags are the flags of `metascript run`.
type engineFlags struct {
	kubeconfig     string
	workers        int
	maxReconciles  int
	maxHookCalls   int
	qps            float64
	burst          int
	metricsAddr    string
	healthAddr     string
	pprofAddr      string
	debugAddr      string
	logLevel       string
	cacheSize      int
	budgets        hookBudgetFlags
	isolated       isolatedFlags
	shutdownGrace  time.Duration
	statusInterval time.Duration
	removalGrace   time.Duration
	revisionNS     string
	memoryLimit    string
	maxAnswer      string
	answerMemory   string
	maxSource      string
	leader         leaderFlags
	tenants        tenantFlags
}

var runUsage = `Usage: metascript run [flags]

Runs the engine against a cluster (--kubeconfig, or the in-cluster config): every controller
resource (` + strings.Join(kinds.Names(), ", ") + `)
becomes a running controller, until SIGINT or SIGTERM.

Flags:
`

func parseEngineFlags(args []string) (*engineFlags, error) {
	f := &engineFlags{}
	fs := newFlagSet("run", runUsage, os.Stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; in-cluster config when empty")
	fs.IntVar(&f.workers, "workers", 4, "reconcile workers per controller")
	fs.IntVar(&f.maxReconciles, "max-reconciles", 16,
		"reconciles of all controllers at once, shared fairly between them; 0 for no shared bound")
	fs.IntVar(&f.maxHookCalls, "max-hook-calls", 8, "hook calls of one controller at once; 0 for no bound")
	fs.Float64Var(&f.qps, "qps", 50, "API client queries per second")
	fs.IntVar(&f.burst, "burst", 100, "API client burst")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":9090", "address of /metrics; empty disables")
	fs.StringVar(&f.healthAddr, "health-addr", ":9091", "address of /healthz and /readyz; empty disables")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "address of net/http/pprof's /debug/pprof/; empty (the default) disables")
	fs.StringVar(&f.debugAddr, "debug-addr", defaultDebugAddr, "address of "+trace.Path+", the recent reconciles 'metascript trace' reads (loopback by default: hook answers are in it); empty disables it, and the engine records nothing")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&f.cacheSize, "compile-cache-size", 512, "compiled programs kept in memory")
	f.budgets.register(fs)
	f.isolated.register(fs)
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 30*time.Second, "how long in-flight reconciles may run after SIGTERM")
	fs.DurationVar(&f.statusInterval, "status-interval", 10*time.Second, "how often controller status counts are refreshed")
	fs.StringVar(&f.revisionNS, "revision-namespace", reconcile.DefaultRevisionNamespace, "the namespace holding the rollout revisions of cluster-scoped parents (a namespaced parent's live in its own); empty: their children cannot roll")
	fs.DurationVar(&f.removalGrace, "removal-grace", 5*time.Minute, "how long a deleted controller's finalize hook may take for a parent being deleted before the parent is released without it")
	fs.StringVar(&f.memoryLimit, "memory-limit", "auto", "the Go runtime's soft memory limit, near which it collects more often: auto (90% of the container's cgroup memory limit, unless GOMEMLIMIT is set), none, or a quantity such as 900Mi")
	fs.StringVar(&f.maxAnswer, "max-answer-bytes", "16Mi", "the largest answer of one hook call, inline or webhook: a larger one is refused before it is converted or read further")
	fs.StringVar(&f.maxSource, "max-source-bytes", "256Ki", "the most inline source one controller's hooks may compile, its shared script included")
	fs.StringVar(&f.answerMemory, "answer-memory", "256Mi", "the room the webhook answers held by reconciles in flight share, fairly among tenants; at least --max-answer-bytes")
	f.leader.register(fs)
	f.tenants.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q", fs.Args())
		usageError(fs, "%v", err)
		return nil, err
	}
	return f, nil
}

func runEngine(args []string) int {
	f, err := parseEngineFlags(args)
	if err != nil {
		return flagExit(err)
	}
	log, err := newLogger(f.logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "metascript run:", err)
		return exitUsage
	}
	// client-go's own log lines (leader election's among them) go to the same JSON log.
	klog.SetSlogLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, f, log); err != nil {
		log.Error("engine stopped", "error", err.Error())
		return 1
	}
	return 0
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func restConfig(f *engineFlags) (*rest.Config, error) {
	if f.kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", f.kubeconfig)
}

// serve wires the engine and runs it until ctx ends.
func serve(ctx context.Context, f *engineFlags, log *slog.Logger) error {
	cfg, err := restConfig(f)
	if err != nil {
		return fmt.Errorf("cluster config: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	cfg.UserAgent = "metascript"
	defaults, ceilings, err := f.budgets.parse()
	if err != nil {
		return err
	}
	isolatedOpts, err := f.isolated.options(log)
	if err != nil {
		return err
	}
	if err := setMemoryLimit(f.memoryLimit, log); err != nil {
		return err
	}
	maxAnswer, err := quantityFlag("max-answer-bytes", f.maxAnswer)
	if err != nil {
		return err
	}
	answerMemory, err := quantityFlag("answer-memory", f.answerMemory)
	if err != nil {
		return err
	}
	maxSource, err := quantityFlag("max-source-bytes", f.maxSource)
	if err != nil {
		return err
	}
	if answerMemory < maxAnswer {
		return fmt.Errorf("--answer-memory %s is less than one answer of --max-answer-bytes %s", f.answerMemory, f.maxAnswer)
	}
	metrics := enginemetrics.New()
	member, err := f.leader.member(cfg, log, metrics.Registry)
	if err != nil {
		return err
	}
	opts := engine.Options{
		Config:            cfg,
		Workers:           f.workers,
		MaxReconciles:     f.maxReconciles,
		MaxHookCalls:      f.maxHookCalls,
		CacheSize:         f.cacheSize,
		Defaults:          defaults,
		Ceilings:          ceilings,
		WebhookCeiling:    f.budgets.ceilings.webhookTimeout,
		MaxAnswerBytes:    maxAnswer,
		AnswerMemory:      answerMemory,
		MaxSourceBytes:    maxSource,
		StatusInterval:    f.statusInterval,
		RemovalGrace:      f.removalGrace,
		RevisionNamespace: f.revisionNS,
		NoTrace:           f.debugAddr == "", // nobody could read it
		Log:               log,
		Metrics:           metrics,
		Isolated:          isolatedOpts,
	}
	if err := f.tenants.apply(&opts, f.metricsAddr, f.healthAddr, f.pprofAddr, f.debugAddr); err != nil {
		return err
	}
	if member != nil {
		opts.Shard = member
	}
	eng, err := engine.New(opts)
	if err != nil {
		return err
	}
	elector, err := f.leader.elector(cfg, log, eng.Metrics)
	if err != nil {
		return err
	}
	servers := startServers(f, eng, healthChecks(eng, elector, member), log)
	log.Info("engine starting", "api", cfg.Host, "workers", f.workers, "leaderElection", elector != nil, "sharding", member != nil)
	done := make(chan error, 1)
	switch {
	case member != nil:
		// The member waits for the engine to stop before it deletes its Lease, so the
		// shutdown grace below covers both.
		go func() { done <- member.Run(ctx, eng.Run, func() { os.Exit(1) }) }()
	case elector != nil:
		// The elector waits for the engine to stop before it releases the Lease, so the
		// shutdown grace below covers both.
		go func() { done <- elector.Run(ctx, eng.Run, func() { os.Exit(1) }) }()
	default:
		go func() { done <- eng.Run(ctx) }()
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		log.Info("shutting down; finishing in-flight reconciles", "grace", f.shutdownGrace.String())
		select {
		case err = <-done:
		case <-time.After(f.shutdownGrace):
			err = errors.New("in-flight reconciles did not finish within the shutdown grace period")
		}
	}
	for _, s := range servers {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Shutdown(sctx)
		cancel()
	}
	return err
}

func startServers(f *engineFlags, eng *engine.Engine, checks health, log *slog.Logger) []*http.Server {
	// One server per distinct address, so that any of the endpoints may share one.
	muxes := map[string]*http.ServeMux{}
	var addrs []string
	mux := func(addr string) *http.ServeMux {
		if muxes[addr] == nil {
			muxes[addr] = http.NewServeMux()
			addrs = append(addrs, addr)
		}
		return muxes[addr]
	}
	if f.metricsAddr != "" {
		mux(f.metricsAddr).Handle("/metrics", promhttp.HandlerFor(eng.Metrics.Registry, promhttp.HandlerOpts{}))
	}
	if f.healthAddr != "" {
		h := mux(f.healthAddr)
		h.Handle("/healthz", checks.live)
		h.Handle("/readyz", checks.ready)
	}
	if f.pprofAddr != "" {
		// Registered explicitly: importing net/http/pprof for its side effect would serve the
		// profiles on http.DefaultServeMux, which nothing here serves.
		p := mux(f.pprofAddr)
		p.HandleFunc("/debug/pprof/", pprof.Index)
		p.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		p.HandleFunc("/debug/pprof/profile", pprof.Profile)
		p.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		p.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if f.debugAddr != "" {
		mux(f.debugAddr).Handle(trace.Path, eng.Trace.Handler())
	}
	var servers []*http.Server
	for _, addr := range addrs {
		// No WriteTimeout: a CPU profile or trace streams for as long as it was asked to.
		s := &http.Server{Addr: addr, Handler: muxes[addr], ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, s)
		go func() {
			if err := s.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("server failed", "addr", addr, "error", err.Error())
			}
		}()
	}
	return servers
}
