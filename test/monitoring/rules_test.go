// Package monitoring checks the example alerts and dashboard of manifests/monitoring with the
// real Prometheus tools: promtool checks and unit-tests every alert, and a Prometheus server
// scrapes running engines so that every dashboard panel's query is seen to return a series.
// The tools are Debian's prometheus package, fetched and unpacked by tools.sh beside this file.
package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleFile is the PrometheusRule as the repository ships it.
const ruleFile = "../../manifests/monitoring/prometheusrule.yaml"

// ruleGroups writes the PrometheusRule's spec.groups as a Prometheus rule file in dir (what
// the Prometheus Operator hands Prometheus) and returns its path and the alerts' names.
func ruleGroups(t *testing.T, dir string) (string, []string) {
	t.Helper()
	raw, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string           `json:"name"`
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatalf("%s: %v", ruleFile, err)
	}
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if a, ok := r["alert"].(string); ok {
				alerts = append(alerts, a)
			}
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, alerts
}

// TestAlertRules: promtool accepts the rules and every unit test of testdata/alerts_test.yaml
// passes: each alert fires, with its labels and rendered annotations, where it should, and not
// where it should not.
func TestAlertRules(t *testing.T) {
	bin := tools(t)
	dir := t.TempDir()
	rules, _ := ruleGroups(t, dir)
	promtool(t, bin, "check", "rules", rules)
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, bin, "test", "rules", filepath.Join(dir, "alerts_test.yaml"))
}

// TestEveryAlertTested: each alert of the PrometheusRule has a unit test in which it fires and
// one in which it stays quiet, and the tests name no alert the rules lack.
func TestEveryAlertTested(t *testing.T) {
	_, alerts := ruleGroups(t, t.TempDir())
	raw, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			Name   string `json:"name"`
			Alerts []struct {
				Alertname string `json:"alertname"`
				Expected  []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.Alerts {
			if !slices.Contains(alerts, a.Alertname) {
				t.Errorf("test %q checks alert %s, which the rules do not have", tc.Name, a.Alertname)
			}
			if len(a.Expected) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] {
			t.Errorf("no test in which %s fires", a)
		}
		if !quiet[a] {
			t.Errorf("no test in which %s stays quiet", a)
		}
	}
}

// promtool runs bin/promtool with args, failing the test with its output if it fails.
func promtool(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "promtool"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
	t.Logf("promtool %v:\n%s", args, out)
}
