package metrics

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// operationsDoc is where the engine's metrics are listed for operators.
var operationsDoc = filepath.Join("..", "..", "docs", "operations.md")

// docRow is one row of the metrics table in docs/operations.md.
type docRow struct {
	line   int
	names  []string // one metric, or name prefixes ending in * (the standard collectors)
	typ    string
	labels []string // sorted
}

var backticked = regexp.MustCompile("`([^`]*)`")

// metricsTable reads the table under "## Metrics" whose header starts with "| metric |".
// Errors carry the file and line.
func metricsTable(path string) ([]docRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		rows             []docRow
		section, inTable bool
		n                int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Metrics"
			inTable = false
			continue
		case !section:
			continue
		case strings.HasPrefix(line, "| metric |"):
			inTable = true
			continue
		case inTable && strings.HasPrefix(line, "| ---"):
			continue
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		}
		if !inTable {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 cells (metric, type, labels, meaning), have %d", path, n, len(cells))
		}
		row := docRow{line: n, typ: strings.TrimSpace(cells[1])}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			row.names = append(row.names, m[1])
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			row.labels = append(row.labels, m[1])
		}
		sort.Strings(row.labels)
		if len(row.names) == 0 {
			return nil, fmt.Errorf("%s:%d: no `metric` in the first cell", path, n)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no metrics table (| metric | type | labels | meaning |) under ## Metrics", path)
	}
	return rows, nil
}

var docTypes = map[string]dto.MetricType{"counter": dto.MetricType_COUNTER, "gauge": dto.MetricType_GAUGE,
	"histogram": dto.MetricType_HISTOGRAM, "summary": dto.MetricType_SUMMARY}

// TestOperationsDocListsEveryMetric: the table in docs/operations.md and the registered metrics
// agree: every engine metric has a row with its type and labels, every row names a registered
// metric, and the Go and process collectors are covered by a row of prefixes.
func TestOperationsDocListsEveryMetric(t *testing.T) {
	rows, err := metricsTable(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	registered := engineMetrics(t)
	documented := map[string]bool{}
	var prefixes []string
	for _, row := range rows {
		where := fmt.Sprintf("%s:%d", operationsDoc, row.line)
		for _, name := range row.names {
			if prefix, ok := strings.CutSuffix(name, "*"); ok {
				if !standard(prefix + "x") {
					t.Errorf("%s: %s: only the standard collectors (go_*, process_*) may be listed by prefix", where, name)
				}
				prefixes = append(prefixes, prefix)
				continue
			}
			if documented[name] {
				t.Errorf("%s: %s listed twice", where, name)
			}
			documented[name] = true
			f, ok := registered[name]
			if !ok {
				t.Errorf("%s: %s is not a metric the engine registers", where, name)
				continue
			}
			if want, ok := docTypes[row.typ]; !ok || want != f.Type {
				t.Errorf("%s: %s: type %q, want %s", where, name, row.typ, strings.ToLower(f.Type.String()))
			}
			if strings.Join(row.labels, ",") != strings.Join(f.Labels, ",") {
				t.Errorf("%s: %s: labels %v, want %v", where, name, row.labels, f.Labels)
			}
		}
	}
	for name := range registered {
		if documented[name] {
			continue
		}
		covered := false
		for _, p := range prefixes {
			covered = covered || standard(name) && strings.HasPrefix(name, p)
		}
		if !covered {
			t.Errorf("%s: %s is registered but not in the ## Metrics table", operationsDoc, name)
		}
	}
}

// TestMetricsTableFindsMistakes: the table reader and comparison fail on a stale doc.
func TestMetricsTableFindsMistakes(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"## Metrics\n\nNo table.\n", "no metrics table"},
		{"## Metrics\n\n| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n| `a` | gauge | |\n", ":5: want 4 cells"},
		{"## Metrics\n\n| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n| a | gauge | | x |\n", ":5: no `metric`"},
		{"## Other\n\n| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n| `a` | gauge | | x |\n", "no metrics table"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "ops.md")
		if err := os.WriteFile(path, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := metricsTable(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.doc, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "ops.md")
	doc := "## Metrics\n\n| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n" +
		"| `metascript_reconciles_total` | counter | `controller`, `result` | x |\n" +
		"| `metascript_compile_cache_entries` | gauge | — | x |\n\n## Next\n\n| metric | type | labels | meaning |\n| `b` | c | | d |\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := metricsTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].names[0] != "metascript_reconciles_total" || rows[0].typ != "counter" ||
		strings.Join(rows[0].labels, ",") != "controller,result" || len(rows[1].labels) != 0 || rows[1].line != 6 {
		t.Errorf("rows %+v, want the two rows of the ## Metrics table", rows)
	}
}
