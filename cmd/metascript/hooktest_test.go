package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHookTest(t *testing.T) {
	const d = "testdata/tests/"
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		golden     string // stdout
		wantStderr string
	}{
		{name: "every case passes", args: []string{d + "bundle_test.yaml"}, golden: "hooktest-pass.out"},
		{name: "every case fails, each its own way", args: []string{d + "failing_test.yaml"},
			wantCode: exitFailed, golden: "hooktest-fail.out"},
		{name: "several files, one summary", args: []string{d + "bundle_test.yaml", d + "failing_test.yaml"},
			wantCode: exitFailed, golden: "hooktest-several.out"},
		{name: "controller does not compile", args: []string{d + "compile-error_test.yaml"},
			wantCode: exitFailed, golden: "hooktest-compile-error.out"},
		{name: "--run selects cases", args: []string{"--run", "^(names|finalize)", d + "bundle_test.yaml", d + "failing_test.yaml"},
			golden: "hooktest-run.out"},
		{name: "-v prints the logs of passing cases", args: []string{d + "bundle_test.yaml", "-v", "--run", "two items"},
			golden: "hooktest-verbose.out"},
		{name: "unusable test files", args: []string{
			d + "invalid/unknown-field.yaml", d + "invalid/two-checks.yaml", d + "invalid/error-and-response.yaml",
			d + "invalid/no-request.yaml", d + "invalid/missing-controller.yaml", d + "invalid/bad-path.yaml",
			d + "invalid/no-such-file.yaml"},
			wantCode: exitFailed, golden: "hooktest-invalid.out"},
		{name: "decorator cases pass", args: []string{d + "decorator_test.yaml"}, golden: "hooktest-decorator.out"},
		{name: "map and tombstone cases pass, map by default", args: []string{d + "map_test.yaml"}, golden: "hooktest-map.out"},
		{name: "decorator cases fail with what differs", args: []string{d + "decorator-failing_test.yaml"},
			wantCode: exitFailed, golden: "hooktest-decorator-fail.out"},
		{name: "minimal requests are completed", args: []string{d + "minimal_test.yaml"}, golden: "hooktest-minimal.out"},
		{name: "no files", wantCode: exitUsage, wantStderr: "no test files"},
		{name: "bad --run", args: []string{"--run", "(", d + "bundle_test.yaml"}, wantCode: exitUsage, wantStderr: "--run: error parsing regexp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := hookTest(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			if tt.golden != "" {
				checkGolden(t, tt.golden, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// TestHookTestSummaryLine pins the last line's exact form, which scripts may parse.
func TestHookTestSummaryLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	hookTest([]string{"testdata/tests/bundle_test.yaml", "testdata/tests/failing_test.yaml"}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if got := lines[len(lines)-1]; got != "5 passed, 5 failed" {
		t.Errorf("summary %q, want %q", got, "5 passed, 5 failed")
	}
}
