package metrics

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"metascript.dev/metascript/engine/shard"
)

// registrars are the packages that make collectors, each registered by engineFamilies as the
// engine registers them: this package's New, WatchCompileCache and WatchCaches, and shard.NewMetrics (a
// member of a sharded engine registers its own into the engine's registry).
var registrars = map[string]bool{"engine/metrics": true, "engine/shard": true}

// family is one metric the engine registers, as Prometheus scrapes it.
type family struct {
	Name, Help string
	Type       dto.MetricType
	Labels     []string // sorted
}

// standard reports whether name comes from the Go or process collector rather than the engine.
func standard(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// engineFamilies registers every collector the engine registers (New, WatchCompileCache and
// WatchCaches as engine.New calls them, LeaderObserver as `metascript run` calls it, shard.NewMetrics as a
// sharded member does), records one series in each vector so that Gather returns it, and
// returns what Gather returns. It fails the test
// when a registered engine metric has no series: a collector added to New must get one here.
func engineFamilies(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	m := New()
	m.WatchCompileCache(func() (uint64, uint64, uint64, int) { return 1, 2, 3, 4 })
	m.WatchCaches(func() map[CacheScope]int {
		return map[CacheScope]int{{Resource: "configmaps", Namespace: "team-a"}: 10}
	})
	m.LeaderObserver("metascript-system/metascript-engine")(true)
	shard.NewMetrics(m.Registry).SetParents("compositecontroller/web", 3)
	m.Reconciles.WithLabelValues("compositecontroller/c", "success").Inc()
	m.ReconcileDuration.WithLabelValues("compositecontroller/c").Observe(0.1)
	m.HookInvocations.WithLabelValues("compositecontroller/c", "sync", "starlark", "success").Inc()
	m.HookDuration.WithLabelValues("compositecontroller/c", "sync", "starlark").Observe(0.001)
	m.BudgetExhausted.WithLabelValues("compositecontroller/c", "sync", "timeout").Inc()
	m.ChildOperations.WithLabelValues("compositecontroller/c", "create").Inc()
	m.HookEvents.WithLabelValues("compositecontroller/c", "recorded").Inc()
	m.EngineEvents.WithLabelValues("compositecontroller/c", "limited").Inc()
	m.Controllers.WithLabelValues("running").Inc()
	m.ControllerBuilds.WithLabelValues("compositecontroller/c").Inc()
	m.IsolatedRestarts.WithLabelValues("crash").Inc()
	m.IsolatedCalls.WithLabelValues("success").Inc()
	q := "compositecontroller/c"
	m.queueDepth.WithLabelValues(q).Inc()
	m.queueAdds.WithLabelValues(q).Inc()
	m.queueRetries.WithLabelValues(q).Inc()
	m.queueUnfinish.WithLabelValues(q).Set(1)
	m.queueLongest.WithLabelValues(q).Set(1)
	m.queueLatency.WithLabelValues(q).Observe(0.01)
	m.queueWork.WithLabelValues(q).Observe(0.01)

	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]bool{}
	for _, mf := range mfs {
		gathered[mf.GetName()] = true
	}
	descs := make(chan *prometheus.Desc)
	go func() {
		m.Registry.Describe(descs)
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		match := fqName.FindStringSubmatch(d.String())
		if match == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		if name := match[1]; !standard(name) && !gathered[name] {
			t.Errorf("%s is registered but has no series here: record one in engineFamilies", name)
		}
	}
	return mfs
}

// engineMetrics is engineFamilies by name, with the labels of their series.
func engineMetrics(t *testing.T) map[string]family {
	t.Helper()
	out := map[string]family{}
	for _, mf := range engineFamilies(t) {
		f := family{Name: mf.GetName(), Help: mf.GetHelp(), Type: mf.GetType()}
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !seen[l.GetName()] {
					seen[l.GetName()] = true
					f.Labels = append(f.Labels, l.GetName())
				}
			}
		}
		sort.Strings(f.Labels)
		out[f.Name] = f
	}
	return out
}

// lint is promlint's checks and the engine's own: every engine metric is in the metascript_
// namespace and says what it is in a help text.
func lint(mfs []*dto.MetricFamily) ([]promlint.Problem, error) {
	l := promlint.NewWithMetricFamilies(mfs)
	l.AddCustomValidations(func(mf *dto.MetricFamily) []error {
		if standard(mf.GetName()) {
			return nil
		}
		var errs []error
		if !strings.HasPrefix(mf.GetName(), "metascript_") {
			errs = append(errs, errors.New(`engine metrics are named metascript_<what>`))
		}
		if strings.TrimSpace(mf.GetHelp()) == "" {
			errs = append(errs, errors.New("empty help text"))
		}
		return errs
	})
	return l.Lint()
}

// TestEngineMetricsFollowPrometheusConventions lints every metric the engine exposes, the Go
// and process collectors' included.
func TestEngineMetricsFollowPrometheusConventions(t *testing.T) {
	problems, err := lint(engineFamilies(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestLintFindsWhatItShould: the lint above would fail on the mistakes it is there to catch.
func TestLintFindsWhatItShould(t *testing.T) {
	cases := []struct {
		collector prometheus.Collector
		want      string
	}{
		{prometheus.NewCounter(prometheus.CounterOpts{Name: "metascript_reconciles", Help: "h"}), `"_total" suffix`},
		{prometheus.NewGauge(prometheus.GaugeOpts{Name: "metascript_depth_total", Help: "h"}), `should not have "_total"`},
		{prometheus.NewGauge(prometheus.GaugeOpts{Name: "metascript_wait_milliseconds", Help: "h"}), "base unit"},
		{prometheus.NewHistogram(prometheus.HistogramOpts{Name: "metascript_latency_ms", Help: "h"}), "abbreviated unit"},
		{prometheus.NewGauge(prometheus.GaugeOpts{Name: "reconciles_running", Help: "h"}), "metascript_<what>"},
		{prometheus.NewGauge(prometheus.GaugeOpts{Name: "metascript_running", Help: " "}), "empty help text"},
	}
	for _, c := range cases {
		r := prometheus.NewRegistry()
		r.MustRegister(c.collector)
		mfs, err := r.Gather()
		if err != nil {
			t.Fatal(err)
		}
		problems, err := lint(mfs)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p.Text, c.want)
		}
		if !found {
			t.Errorf("%s: problems %v, want one saying %q", mfs[0].GetName(), problems, c.want)
		}
	}
}

// TestCollectorsAreMadeByRegistrars: no package but the registrars makes or registers
// collectors, so that engineFamilies sees every metric the engine exposes.
func TestCollectorsAreMadeByRegistrars(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			if rel, _ := filepath.Rel(root, path); registrars[filepath.ToSlash(rel)] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, _ := sel.X.(*ast.Ident)
			name := sel.Sel.Name
			makes := pkg != nil && (pkg.Name == "prometheus" && strings.HasPrefix(name, "New") && name != "NewDesc" ||
				pkg.Name == "promauto" || pkg.Name == "collectors")
			if makes || name == "MustRegister" {
				t.Errorf("%s: %s.%s: a package that makes collectors must be one of the registrars, registered by engineFamilies",
					path, exprName(sel.X), name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked %d Go files from %s: not the repository", files, root)
	}
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "…"
}

// TestLeaderObserver: a Lease's series exist at 0 from the start; leading sets 1 and counts a
// transition, stopping sets 0 again.
func TestLeaderObserver(t *testing.T) {
	m := New()
	observe := m.LeaderObserver("ns/lease")
	isLeader, transitions := m.LeaderIsLeader.WithLabelValues("ns/lease"), m.LeaderTransitions.WithLabelValues("ns/lease")
	check := func(when string, leader, times float64) {
		t.Helper()
		if got := testutil.ToFloat64(isLeader); got != leader {
			t.Errorf("%s: is_leader %v, want %v", when, got, leader)
		}
		if got := testutil.ToFloat64(transitions); got != times {
			t.Errorf("%s: transitions %v, want %v", when, got, times)
		}
	}
	if n := testutil.CollectAndCount(m.LeaderTransitions); n != 1 {
		t.Errorf("transitions: %d series before any change, want 1", n)
	}
	check("at first", 0, 0)
	observe(false)
	check("standing by", 0, 0)
	observe(true)
	check("leading", 1, 1)
	observe(false)
	check("stopped", 0, 1)
	observe(true)
	check("leading again", 1, 2)
}
