package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

const namespace = "monitoring"

var shardFlags = []string{"--sharding", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", "4s",
	"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms", "--status-interval", "1s"}

// TestDashboardQueriesReturnSeries: a Prometheus server scrapes, every second, an engine
// that leads its Lease and runs hooks that burn their budget or kill their isolated worker,
// beside a failed and a converging controller; then two sharded engines that take over. Every query of every panel
// of manifests/monitoring/dashboard.json (and of its template variables), over that window,
// returns at least one series: no panel names a metric or label the engine does not export.
func TestDashboardQueriesReturnSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	bin := tools(t)
	c := engineproc.StartCluster(t, namespace, false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prom := startPrometheus(t, bin)
	start := time.Now()

	leader := c.Engine(t, "engine-leader", 2, "--leader-elect", "--leader-elect-namespace", "default",
		"--isolated-workers", "1", "--ceiling-hook-max-memory", "64Gi", "--status-interval", "1s")
	prom.target(t, leader)
	engineproc.WaitReady(t, ctx, leader)
	controllers := schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
	for _, obj := range enginetest.ObjectsFromFile(t, filepath.Join("testdata", "controllers.yaml")) {
		if _, err := c.Admin.Resource(controllers).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, labels := range []map[string]string{nil, nil, {"monitoring": "burn"}} {
		f := enginetest.Fanout(fmt.Sprintf("p%d", i), 2)
		if labels != nil {
			f.SetLabels(labels)
		}
		if _, err := c.Admin.Resource(enginetest.Fanouts).Namespace(namespace).Create(ctx, f, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The leader's series: a restart of the burner's worker, and enough scrapes of it for rates.
	prom.waitSeries(t, ctx, `metascript_isolated_worker_restarts_total`)
	prom.waitSeries(t, ctx, `metascript_hook_budget_exhausted_total`)
	prom.waitSeries(t, ctx, `count_over_time(metascript_leader_election_is_leader[1m]) >= 5`)
	leader.Stop()

	// Two sharded members: a ring, a view change, drains.
	a := c.Engine(t, "engine-a", 2, shardFlags...)
	b := c.Engine(t, "engine-b", 2, shardFlags...)
	prom.target(t, leader, a, b)
	engineproc.WaitReady(t, ctx, a, b)
	prom.waitSeries(t, ctx, `metascript_shard_members == 2`)
	prom.waitSeries(t, ctx, `metascript_shard_drain_duration_seconds_count > 0`)
	prom.waitSeries(t, ctx, `count_over_time(metascript_shard_members[1m]) >= 5`)

	queries := dashboardQueries(t)
	if len(queries) < 20 {
		t.Fatalf("read %d queries from the dashboard; its layout changed?", len(queries))
	}
	end := time.Now()
	for _, q := range queries {
		n, err := prom.rangeSeries(ctx, q.expr, start, end)
		switch {
		case err != nil:
			t.Errorf("panel %q: %s: %v", q.panel, q.expr, err)
		case n == 0:
			t.Errorf("panel %q: %s returns no series", q.panel, q.expr)
		}
	}
}

// query is one query of the dashboard: a panel's target, or a template variable's.
type query struct{ panel, expr string }

// dashboardQueries reads every panel target's expression and every template variable's
// label_values() query, with the variables set to match everything.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	raw, err := os.ReadFile("../../manifests/monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var board struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &board); err != nil {
		t.Fatal(err)
	}
	all := strings.NewReplacer("$controller", ".*", "$job", ".*", "${controller}", ".*", "${job}", ".*")
	var out []query
	for _, p := range board.Panels {
		for _, tg := range p.Targets {
			if tg.Expr != "" {
				out = append(out, query{p.Title, all.Replace(tg.Expr)})
			}
		}
	}
	for _, v := range board.Templating.List {
		q, _ := v.Query.(string)
		if v.Type != "query" || q == "" {
			continue
		}
		// label_values(METRIC, LABEL): the variable has values when METRIC has series with LABEL.
		inner, ok := strings.CutPrefix(q, "label_values(")
		metric, label, ok2 := strings.Cut(strings.TrimSuffix(inner, ")"), ",")
		if !ok || !ok2 {
			t.Fatalf("template variable %s: query %q is not label_values(METRIC, LABEL)", v.Name, q)
		}
		out = append(out, query{"variable " + v.Name, fmt.Sprintf(`%s{%s!=""}`, strings.TrimSpace(metric), strings.TrimSpace(label))})
	}
	return out
}

// prometheus is a Prometheus server on loopback scraping the engines of its file of targets.
type prometheus struct {
	url     string
	targets string // file_sd file
}

// startPrometheus starts bin/prometheus, scraping every second, stopped when t ends.
func startPrometheus(t *testing.T, bin string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	addr, err := engineproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := &prometheus{url: "http://" + addr, targets: filepath.Join(dir, "targets.json")}
	if err := os.WriteFile(p.targets, []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: metascript
    file_sd_configs: [{files: [%q], refresh_interval: 1s}]
`, p.targets)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "prometheus"), "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// target makes engines the scrape targets, each its pod label set to its address.
func (p *prometheus) target(t *testing.T, engines ...*engineproc.Process) {
	t.Helper()
	var groups []map[string]any
	for _, e := range engines {
		groups = append(groups, map[string]any{"targets": []string{e.MetricsAddr()},
			"labels": map[string]string{"pod": e.MetricsAddr(), "namespace": namespace}})
	}
	raw, _ := json.Marshal(groups)
	tmp := p.targets + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p.targets); err != nil {
		t.Fatal(err)
	}
}

// waitSeries waits until the instant query expr returns a series.
func (p *prometheus) waitSeries(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	engineproc.WaitFor(t, ctx, func() (bool, string) {
		n, err := p.series(ctx, "/api/v1/query", url.Values{"query": {expr}})
		if err != nil {
			return false, err.Error()
		}
		return n > 0, "prometheus has no series for " + expr
	})
}

// rangeSeries counts the series expr returns between start and end, a step a second.
func (p *prometheus) rangeSeries(ctx context.Context, expr string, start, end time.Time) (int, error) {
	return p.series(ctx, "/api/v1/query_range", url.Values{"query": {expr},
		"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix()+1, 10)}, "step": {"1"}})
}

func (p *prometheus) series(ctx context.Context, path string, args url.Values) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+args.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("%s", body.Error)
	}
	return len(body.Data.Result), nil
}
