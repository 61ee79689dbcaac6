// Package metrics defines the engine's Prometheus metrics. One *Metrics is made per process
// and registered once; reconcilers record through it. All methods are safe for concurrent use.
//
//	metascript_reconciles_total{controller,result}                 result: success|error
//	metascript_reconcile_duration_seconds{controller}
//	metascript_hook_invocations_total{controller,hook,form,result} result: success|error|budget|invalid
//	metascript_hook_duration_seconds{controller,hook,form}
//	metascript_hook_budget_exhausted_total{controller,hook,budget}
//	metascript_child_operations_total{controller,operation}        create|update|delete|adopt|release
//	metascript_workqueue_depth{name}, metascript_workqueue_adds_total{name},
//	metascript_workqueue_retries_total{name}, metascript_workqueue_queue_duration_seconds{name},
//	metascript_workqueue_work_duration_seconds{name}
//	metascript_controllers{state}                                  running|failed
//	metascript_controller_builds_total{controller}
//	metascript_compile_cache_{hits,misses,evictions}_total, metascript_compile_cache_entries
//	metascript_isolated_worker_restarts_total{reason}              memory|cpu|timeout|cancelled|crash
//	metascript_isolated_calls_total{outcome}                       success|error|worker
//	metascript_leader_election_is_leader{lease}, metascript_leader_election_transitions_total{lease}
//
// The engine's collectors are made here, and a sharded member's in engine/shard; one test
// registers them all, lints them (promlint) and checks them against docs/operations.md and
// manifests/monitoring/. A package that makes collectors must be added to that test.
package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/util/workqueue"
)

// Metrics holds the engine's collectors.
type Metrics struct {
	Registry *prometheus.Registry

	// cacheSizes is what metascript_cache_objects reads (WatchCaches), registered once.
	cacheSizes  atomic.Pointer[func() map[CacheScope]int]
	watchCaches sync.Once

	Reconciles        *prometheus.CounterVec
	ReconcileDuration *prometheus.HistogramVec
	HookInvocations   *prometheus.CounterVec
	HookDuration      *prometheus.HistogramVec
	BudgetExhausted   *prometheus.CounterVec
	ChildOperations   *prometheus.CounterVec
	// HookEvents counts the Events hooks asked for, recorded or dropped by the rate limit.
	HookEvents *prometheus.CounterVec
	// EngineEvents counts the Events the engine recorded about a controller's parents
	// failing, recorded or dropped by the controller's rate of them.
	EngineEvents *prometheus.CounterVec
	Controllers  *prometheus.GaugeVec
	// ControllerBuilds counts the builds of each controller: its hooks compiled, the
	// libraries they load resolved, its runner made (engine/manager), whatever the outcome.
	ControllerBuilds *prometheus.CounterVec
	// IsolatedRestarts and IsolatedCalls count the isolated tier's worker replacements by
	// reason and its calls by outcome (scripting/isolated).
	IsolatedRestarts *prometheus.CounterVec
	IsolatedCalls    *prometheus.CounterVec
	// LeaderIsLeader (0 or 1) and LeaderTransitions (times this process started leading)
	// follow leader election per Lease; see LeaderObserver.
	LeaderIsLeader    *prometheus.GaugeVec
	LeaderTransitions *prometheus.CounterVec

	queueDepth    *prometheus.GaugeVec
	queueAdds     *prometheus.CounterVec
	queueLatency  *prometheus.HistogramVec
	queueWork     *prometheus.HistogramVec
	queueRetries  *prometheus.CounterVec
	queueUnfinish *prometheus.GaugeVec
	queueLongest  *prometheus.GaugeVec
}

// setProvider makes the first Metrics the provider of client-go's work queue metrics:
// client-go allows one provider per process.
var setProvider sync.Once

// New makes and registers the engine's metrics in a new registry that also holds the Go and
// process collectors. The first Metrics made in a process becomes the work queues' metrics
// provider.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.Registry.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_reconciles_total",
		Help: "Reconciles of parents, by controller and result."}, []string{"controller", "result"})
	m.ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "metascript_reconcile_duration_seconds",
		Help: "Duration of one reconcile.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"controller"})
	m.HookInvocations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_hook_invocations_total",
		Help: "Hook invocations by controller, hook, form and result."}, []string{"controller", "hook", "form", "result"})
	m.HookDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "metascript_hook_duration_seconds",
		Help: "Latency of one hook invocation, conversion included.", Buckets: prometheus.ExponentialBuckets(0.00001, 2.5, 16)},
		[]string{"controller", "hook", "form"})
	m.BudgetExhausted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_hook_budget_exhausted_total",
		Help: "Hook invocations stopped by a budget."}, []string{"controller", "hook", "budget"})
	m.ChildOperations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_child_operations_total",
		Help: "Writes of children by operation."}, []string{"controller", "operation"})
	m.HookEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_hook_events_total",
		Help: "Events hooks asked to record on their parents, by outcome: recorded, or limited (over the rate per parent)."},
		[]string{"controller", "outcome"})
	m.EngineEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_engine_events_total",
		Help: "Events the engine recorded about a controller's parents failing, by outcome: recorded, or limited (over the controller's rate of them)."},
		[]string{"controller", "outcome"})
	m.Controllers = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "metascript_controllers",
		Help: "Controller resources by state."}, []string{"state"})
	m.ControllerBuilds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_controller_builds_total",
		Help: "Builds of a controller (hooks compiled, libraries resolved, runner made), whatever the outcome."}, []string{"controller"})
	m.IsolatedRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_isolated_worker_restarts_total",
		Help: "Isolated-tier worker processes replaced, by reason."}, []string{"reason"})
	m.IsolatedCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_isolated_calls_total",
		Help: "Isolated-tier hook calls by outcome: success, error (the hook failed), worker (its worker died)."}, []string{"outcome"})
	m.LeaderIsLeader = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "metascript_leader_election_is_leader",
		Help: "1 while this process holds the Lease and reconciles, else 0."}, []string{"lease"})
	m.LeaderTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metascript_leader_election_transitions_total",
		Help: "Times this process started leading."}, []string{"lease"})
	q := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Name: "metascript_workqueue_" + name, Help: help}
	}
	m.queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts(q("depth", "Work queue depth.")), []string{"name"})
	m.queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts(q("adds_total", "Work queue adds.")), []string{"name"})
	m.queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts(q("retries_total", "Work queue retries.")), []string{"name"})
	m.queueUnfinish = prometheus.NewGaugeVec(prometheus.GaugeOpts(q("unfinished_work_seconds", "Seconds of work in progress.")), []string{"name"})
	m.queueLongest = prometheus.NewGaugeVec(prometheus.GaugeOpts(q("longest_running_processor_seconds", "Longest running item.")), []string{"name"})
	m.queueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "metascript_workqueue_queue_duration_seconds",
		Help: "Time an item waits in the queue.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"name"})
	m.queueWork = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "metascript_workqueue_work_duration_seconds",
		Help: "Time processing an item.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"name"})
	for _, c := range []prometheus.Collector{m.Reconciles, m.ReconcileDuration, m.HookInvocations, m.HookDuration,
		m.BudgetExhausted, m.ChildOperations, m.HookEvents, m.EngineEvents, m.Controllers, m.ControllerBuilds, m.IsolatedRestarts, m.IsolatedCalls, m.LeaderIsLeader, m.LeaderTransitions, m.queueDepth, m.queueAdds, m.queueRetries,
		m.queueUnfinish, m.queueLongest, m.queueLatency, m.queueWork} {
		f(c)
	}
	setProvider.Do(func() { workqueue.SetProvider(provider{m}) })
	return m
}

// WorkQueue publishes, in m, the metrics of a work queue made outside client-go
// (fairshare.Queue) as client-go's queues publish theirs.
func (m *Metrics) WorkQueue() workqueue.MetricsProvider { return provider{m} }

// provider forwards work queue metrics to a Metrics: client-go's go to the first Metrics of
// the process.
type provider struct{ m *Metrics }

func (p provider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.m.queueDepth.WithLabelValues(name)
}
func (p provider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.m.queueAdds.WithLabelValues(name)
}
func (p provider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.m.queueLatency.WithLabelValues(name)
}
func (p provider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.m.queueWork.WithLabelValues(name)
}
func (p provider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.queueUnfinish.WithLabelValues(name)
}
func (p provider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.queueLongest.WithLabelValues(name)
}
func (p provider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.m.queueRetries.WithLabelValues(name)
}

// QueueDepth is the current depth of the named work queue, 0 for a queue never seen.
func (m *Metrics) QueueDepth(name string) float64 {
	var out dto.Metric
	if err := m.queueDepth.WithLabelValues(name).Write(&out); err != nil {
		return 0
	}
	return out.GetGauge().GetValue()
}

// CacheScope names one of the engine's informers: a resource ("configmaps",
// "apps.example.com") watched in every namespace (Namespace empty) or in one namespace.
type CacheScope struct{ Resource, Namespace string }

// WatchCaches registers metascript_cache_objects{resource,namespace}, read from sizes (objects
// cached by each informer) at every scrape. Engines sharing one Metrics (an engine restarted
// in a test) report the caches of the last that called it.
func (m *Metrics) WatchCaches(sizes func() map[CacheScope]int) {
	m.cacheSizes.Store(&sizes)
	m.watchCaches.Do(func() { m.Registry.MustRegister(cacheCollector{&m.cacheSizes}) })
}

var cacheObjects = prometheus.NewDesc("metascript_cache_objects",
	"Objects the engine caches, by resource and by the namespace its informer watches (empty: every namespace): "+
		"with sharding, only what this replica's parents need.", []string{"resource", "namespace"}, nil)

type cacheCollector struct {
	sizes *atomic.Pointer[func() map[CacheScope]int]
}

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) { ch <- cacheObjects }

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for s, n := range (*c.sizes.Load())() {
		ch <- prometheus.MustNewConstMetric(cacheObjects, prometheus.GaugeValue, float64(n), s.Resource, s.Namespace)
	}
}

// CompileCache is what the compile-cache metrics read; *scripting.Runtime's Stats fits.
type CompileCache func() (hits, misses, evictions uint64, entries int)

// WatchCompileCache registers metascript_compile_cache_{hits,misses,evictions}_total and
// metascript_compile_cache_entries, read from stats at every scrape. Only the first call per
// Metrics registers: engines sharing one Metrics (tests) report the first engine's cache.
func (m *Metrics) WatchCompileCache(stats CompileCache) {
	counter := func(name, help string, pick func(h, mi, e uint64) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "metascript_compile_cache_" + name + "_total", Help: help},
			func() float64 { h, mi, e, _ := stats(); return float64(pick(h, mi, e)) })
	}
	for _, c := range []prometheus.Collector{
		counter("hits", "Compiles served from the cache.", func(h, _, _ uint64) uint64 { return h }),
		counter("misses", "Compiles that compiled.", func(_, mi, _ uint64) uint64 { return mi }),
		counter("evictions", "Compiled programs dropped to stay within the cache size.", func(_, _, e uint64) uint64 { return e }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "metascript_compile_cache_entries", Help: "Compiled programs cached."},
			func() float64 { _, _, _, n := stats(); return float64(n) }),
	} {
		_ = m.Registry.Register(c) // AlreadyRegisteredError: an earlier engine's cache is reported
	}
}

// LeaderObserver returns a func for leader.Config.Observe that records whether this process
// leads the Lease lease ("namespace/name"). Both of the Lease's series exist, at 0, from this
// call on, so that a standby reports 0 rather than nothing.
func (m *Metrics) LeaderObserver(lease string) func(leading bool) {
	isLeader, transitions := m.LeaderIsLeader.WithLabelValues(lease), m.LeaderTransitions.WithLabelValues(lease)
	isLeader.Set(0)
	return func(leading bool) {
		if leading {
			isLeader.Set(1)
			transitions.Inc()
		} else {
			isLeader.Set(0)
		}
	}
}
