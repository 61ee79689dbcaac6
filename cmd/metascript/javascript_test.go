package main

import (
	"bytes"
	"strings"
	"testing"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/scripting"
)

// requireJavaScript fails the test unless the engine's runtime compiles JavaScript: a
// missing or broken adapter is a regression, not a reason to skip the commands' tests.
func requireJavaScript(t *testing.T) {
	t.Helper()
	if _, err := engine.NewRuntime(scripting.Options{}).Compile(scripting.JavaScript, "probe", "function f() {}"); err != nil {
		t.Fatalf("the engine's runtime does not compile JavaScript: %v", err)
	}
}

// TestJavaScriptHooks runs the three commands on JavaScript hooks; the Starlark tests cover
// the commands' behaviour in depth, these that nothing in them is Starlark-specific.
func TestJavaScriptHooks(t *testing.T) {
	requireJavaScript(t)
	const c = "testdata/controllers/"
	t.Run("hook run", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := hookRun([]string{"-f", c + "bundle-javascript.yaml", "--request", "testdata/requests/bundle.yaml"}, &stdout, &stderr); code != exitOK {
			t.Fatalf("exit code %d: %s", code, stderr.String())
		}
		checkJSON(t, stdout.Bytes(), "testdata/responses/bundle.json")
	})
	t.Run("hook run, thrown error", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := hookRun([]string{"-f", c + "bundle-javascript.yaml", "--request", "testdata/requests/no-items.yaml"}, &stdout, &stderr)
		if code != exitFailed || !strings.Contains(stderr.String(), "spec.items is required") ||
			!strings.Contains(stderr.String(), "compositecontroller/bundle-javascript/hooks/sync:") {
			t.Errorf("exit code %d, stderr:\n%s\nwant 1, the thrown message and a stack in the hook's source", code, stderr.String())
		}
	})
	t.Run("hook test", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := hookTest([]string{"testdata/tests/bundle-javascript_test.yaml"}, &stdout, &stderr)
		if code != exitOK || !strings.HasSuffix(stdout.String(), "4 passed, 0 failed\n") {
			t.Errorf("exit code %d, stdout:\n%s", code, stdout.String())
		}
	})
	t.Run("hook run, decorator", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := hookRun([]string{"-f", c + "decorator-javascript.yaml", "--request", "testdata/requests/decorator.yaml"}, &stdout, &stderr); code != exitOK {
			t.Fatalf("exit code %d: %s", code, stderr.String())
		}
		checkJSON(t, stdout.Bytes(), "testdata/responses/decorator.json")
	})
	t.Run("hook test, decorator", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := hookTest([]string{"testdata/tests/decorator-javascript_test.yaml"}, &stdout, &stderr)
		if code != exitOK || !strings.HasSuffix(stdout.String(), "3 passed, 0 failed\n") {
			t.Errorf("exit code %d, stdout:\n%s", code, stdout.String())
		}
	})
	t.Run("validate", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := validate([]string{c + "bundle-javascript.yaml", c + "broken-javascript.yaml"}, &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
		want := []string{
			"testdata/controllers/broken-javascript.yaml:14:44: compositecontroller/broken-javascript spec.hooks.sync.javascript.source: Unexpected token {",
			`testdata/controllers/broken-javascript.yaml:22:11: compositecontroller/broken-javascript spec.hooks.finalize.javascript.source: no top-level function "finalize"`,
			"2 controllers, 4 hooks, 2 problems",
		}
		if code != exitFailed || len(lines) != len(want) {
			t.Fatalf("exit code %d, stdout:\n%s", code, stdout.String())
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("line %d: %q, want prefix %q", i, lines[i], w)
			}
		}
	})
}
