package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"
)

// monitoringDir holds the example PrometheusRule and Grafana dashboard.
var monitoringDir = filepath.Join("..", "..", "manifests", "monitoring")

// targetLabels are the labels Prometheus's scrape adds to every series (the Prometheus
// Operator's ServiceMonitor among them), not the engine.
var targetLabels = map[string]bool{"job": true, "instance": true, "namespace": true, "pod": true,
	"service": true, "container": true, "endpoint": true}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	metricName = regexp.MustCompile(`\b(?:metascript|go|process)_[a-zA-Z0-9_]+\b`)
	selector   = regexp.MustCompile(`\b((?:metascript|go|process)_[a-zA-Z0-9_]+)\s*\{([^}]*)\}`)
	matcher    = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	// templated finds the labels an annotation reads, in any action ({{ $labels.x }},
	// {{ with $labels.x }}); keywords (else, end) and $value are not labels.
	templated = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
)

// seriesOf returns the family a series name belongs to (a histogram's _bucket, _sum and
// _count are its family's) and the labels its series have.
func seriesOf(name string, registered map[string]family) (family, []string, bool) {
	if f, ok := registered[name]; ok {
		return f, f.Labels, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		f, found := registered[base]
		if !ok || !found || f.Type != dto.MetricType_HISTOGRAM && f.Type != dto.MetricType_SUMMARY {
			continue
		}
		if suffix == "_bucket" {
			return f, append([]string{"le"}, f.Labels...), true
		}
		return f, f.Labels, true
	}
	return family{}, nil, false
}

// checkQuery checks one PromQL expression against the registered metrics: every metric it names
// is registered, every label it selects, groups by or (in templates, the alert's annotations or
// a panel's legend) prints is one those metrics have or a scrape adds, and its brackets balance.
// It is not a PromQL parser: it finds names and labels, not every syntax error.
func checkQuery(expr string, templates []string, registered map[string]family) []error {
	var errs []error
	bare := quoted.ReplaceAllString(expr, `""`)
	labels := map[string]bool{}
	for name := range targetLabels {
		labels[name] = true
	}
	names := metricName.FindAllString(bare, -1)
	if len(names) == 0 && !strings.Contains(bare, "label_values") {
		errs = append(errs, fmt.Errorf("%q names no engine metric", expr))
	}
	for _, name := range names {
		_, ls, ok := seriesOf(name, registered)
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not a metric the engine registers", name))
			continue
		}
		for _, l := range ls {
			labels[l] = true
		}
	}
	for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
		_, ls, ok := seriesOf(sel[1], registered)
		if !ok {
			continue
		}
		has := map[string]bool{}
		for _, l := range ls {
			has[l] = true
		}
		for _, m := range splitMatchers(sel[2]) {
			l := matcher.FindStringSubmatch(m)
			if l == nil {
				errs = append(errs, fmt.Errorf("%s{%s}: cannot read the matcher %q", sel[1], sel[2], m))
			} else if !has[l[1]] && !targetLabels[l[1]] {
				errs = append(errs, fmt.Errorf("%s has no label %s", sel[1], l[1]))
			}
		}
	}
	var used []string
	for _, g := range grouping.FindAllStringSubmatch(bare, -1) {
		used = append(used, strings.Split(g[1], ",")...)
	}
	for _, t := range templates {
		for _, m := range templated.FindAllStringSubmatch(t, -1) {
			used = append(used, m[1])
		}
	}
	for _, l := range used {
		if l = strings.TrimSpace(l); l != "" && !labels[l] {
			errs = append(errs, fmt.Errorf("%q: no metric it names has the label %s", expr, l))
		}
	}
	depth := map[rune]int{}
	for _, r := range bare {
		switch r {
		case '(', '[', '{':
			depth[r]++
		case ')':
			depth['(']--
		case ']':
			depth['[']--
		case '}':
			depth['{']--
		}
	}
	for open, d := range depth {
		if d != 0 {
			errs = append(errs, fmt.Errorf("%q: unbalanced %c", expr, open))
		}
	}
	return errs
}

// splitMatchers splits the inside of a selector's braces at the commas between matchers.
func splitMatchers(s string) []string {
	var out []string
	for _, m := range strings.Split(quoted.ReplaceAllStringFunc(s, func(q string) string {
		return strings.ReplaceAll(q, ",", "\x00")
	}), ",") {
		if strings.TrimSpace(m) != "" {
			out = append(out, strings.ReplaceAll(m, "\x00", ","))
		}
	}
	return out
}

// prometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule this test reads.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name, Namespace string
		Labels          map[string]string
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Record      string            `json:"record"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// TestPrometheusRuleUsesRegisteredMetrics: every alert of the example rule is complete, uses
// only metrics and labels the engine registers, and is listed in docs/operations.md.
func TestPrometheusRuleUsesRegisteredMetrics(t *testing.T) {
	path := filepath.Join(monitoringDir, "prometheusrule.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rule prometheusRule
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" || rule.Metadata.Name == "" {
		t.Errorf("%s: %s %s %q, want a named monitoring.coreos.com/v1 PrometheusRule", path, rule.APIVersion, rule.Kind, rule.Metadata.Name)
	}
	registered := engineMetrics(t)
	alerts := map[string]bool{}
	for _, g := range rule.Spec.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("%s: a group needs a name and rules: %q has %d", path, g.Name, len(g.Rules))
		}
		for _, r := range g.Rules {
			where := fmt.Sprintf("%s: group %s, alert %s", path, g.Name, r.Alert)
			if r.Alert == "" || r.Record != "" {
				t.Errorf("%s: want alerting rules only", where)
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("%s: a second alert of that name", where)
			}
			alerts[r.Alert] = true
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", where, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: want a summary and a description", where)
			}
			templates := []string{r.Annotations["summary"], r.Annotations["description"]}
			for _, err := range checkQuery(r.Expr, templates, registered) {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	documented, err := alertTable(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	for a := range alerts {
		if !documented[a] {
			t.Errorf("%s: alert %s is not in the alerts table of ## Metrics", operationsDoc, a)
		}
	}
	for a := range documented {
		if !alerts[a] {
			t.Errorf("%s: alert %s is documented but not in %s", operationsDoc, a, path)
		}
	}
}

// alertTable reads the alert names from the table under "## Metrics" whose header starts with
// "| alert |".
func alertTable(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, section, ok := strings.Cut(string(data), "\n## Metrics\n")
	if !ok {
		return nil, fmt.Errorf("%s: no ## Metrics section", path)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, table, ok := strings.Cut(section, "\n| alert |")
	if !ok {
		return nil, fmt.Errorf("%s: no alerts table (| alert | ...) under ## Metrics", path)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if m := backticked.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "| ---") {
			out[m[1]] = true
		}
	}
	return out, nil
}

// TestDashboardUsesRegisteredMetrics: every panel of the example dashboard has queries, and
// every query and template variable uses only metrics and labels the engine registers.
func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	path := filepath.Join(monitoringDir, "dashboard.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID          int    `json:"id"`
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			GridPos     *struct{ H, W, X, Y int }
			Targets     []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
				RefID        string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("%s: want a uid and a title", path)
	}
	registered := engineMetrics(t)
	variables := map[string]bool{}
	for _, v := range dash.Templating.List {
		variables[v.Name] = true
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			for _, err := range checkQuery(q, nil, registered) {
				t.Errorf("%s: variable %s: %v", path, v.Name, err)
			}
		}
	}
	ids, queries := map[int]bool{}, 0
	for _, p := range dash.Panels {
		where := fmt.Sprintf("%s: panel %d %q", path, p.ID, p.Title)
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("%s: want a unique, non-zero id", where)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("%s: want a gridPos", where)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", where)
		}
		for _, q := range p.Targets {
			queries++
			for _, err := range checkQuery(q.Expr, []string{q.LegendFormat}, registered) {
				t.Errorf("%s, query %s: %v", where, q.RefID, err)
			}
			for _, v := range regexp.MustCompile(`\$([a-z_]+)`).FindAllStringSubmatch(q.Expr, -1) {
				if !variables[v[1]] {
					t.Errorf("%s, query %s: no template variable $%s", where, q.RefID, v[1])
				}
			}
		}
	}
	if queries == 0 {
		t.Errorf("%s: no queries at all", path)
	}
}

// TestMonitoringKustomizationNamesItsFiles: manifests/monitoring/kustomization.yaml lists the
// rule and the dashboard, and every file it names exists.
func TestMonitoringKustomizationNamesItsFiles(t *testing.T) {
	path := filepath.Join(monitoringDir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	named := append([]string{}, k.Resources...)
	for _, g := range k.ConfigMapGenerator {
		named = append(named, g.Files...)
	}
	sort.Strings(named)
	if strings.Join(named, " ") != "dashboard.json prometheusrule.yaml" {
		t.Errorf("%s names %v, want dashboard.json and prometheusrule.yaml", path, named)
	}
	for _, f := range named {
		if _, err := os.Stat(filepath.Join(monitoringDir, f)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// TestCheckQueryFindsMistakes: the checks above fail on the drift they are there to catch.
func TestCheckQueryFindsMistakes(t *testing.T) {
	registered := map[string]family{
		"metascript_reconciles_total": {Name: "metascript_reconciles_total", Type: dto.MetricType_COUNTER,
			Labels: []string{"controller", "result"}},
		"metascript_reconcile_duration_seconds": {Name: "metascript_reconcile_duration_seconds", Type: dto.MetricType_HISTOGRAM,
			Labels: []string{"controller"}},
	}
	cases := []struct {
		expr, template string
		want           string // "" for no error
	}{
		{`sum by (controller) (rate(metascript_reconciles_total{result="error"}[5m]))`, "{{ $labels.controller }}", ""},
		{`histogram_quantile(0.99, sum by (le) (rate(metascript_reconcile_duration_seconds_bucket{job=~"$job"}[5m])))`, "", ""},
		{`rate(metascript_reconciles[5m])`, "", "metascript_reconciles is not a metric"},
		{`rate(metascript_reconciles_total_bucket[5m])`, "", "not a metric"},
		{`rate(metascript_reconciles_total{reason="x"}[5m])`, "", "has no label reason"},
		{`rate(metascript_reconciles_total{result="a,b",reason="x"}[5m])`, "", "has no label reason"},
		{`sum by (hook) (rate(metascript_reconciles_total[5m]))`, "", "has the label hook"},
		{`sum(rate(metascript_reconciles_total[5m]))`, "{{ $labels.hook }}", "has the label hook"},
		{`sum(rate(metascript_reconciles_total[5m]))`, "{{ with $labels.hook }}{{ . }}{{ else }}none{{ end }}", "has the label hook"},
		{`sum by (controller) (rate(metascript_reconciles_total[5m]))`, "{{ with $labels.controller }}{{ . }}{{ else }}none{{ end }}", ""},
		{`sum(rate(metascript_reconciles_total[5m])`, "", "unbalanced ("},
		{`up == 0`, "", "names no engine metric"},
	}
	for _, c := range cases {
		errs := checkQuery(c.expr, []string{c.template}, registered)
		got := fmt.Sprint(errs)
		if c.want == "" && len(errs) != 0 || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: errors %s, want %q", c.expr, got, c.want)
		}
	}
}
