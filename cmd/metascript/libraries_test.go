package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestLibraries runs each offline command over controllers that load hook libraries: given
// with --library or in a -f file, missing, broken, out of the controller's scope, and
// library files that cannot be used. Exit code, stdout and stderr are compared with
// testdata/golden/library-NAME.
func TestLibraries(t *testing.T) {
	const c, l, td = "testdata/controllers/", "testdata/libraries/", "testdata/tests/"
	star, js, ns := c+"library-starlark.yaml", c+"library-javascript.yaml", c+"library-namespaced.yaml"
	naming, broken := l+"naming.yaml", l+"broken.yaml"
	req := "testdata/requests/bundle.yaml"
	render := []string{"-f", "testdata/render/bundle-crd.yaml", "--parent", "testdata/render/bundle.yaml", "--now=2025-05-01T12:00:00Z"}
	commands := map[string]func([]string, io.Writer, io.Writer) int{
		"render": renderCommand, "hook-run": hookRun, "hook-test": hookTest, "validate": validate,
	}
	tests := []struct {
		golden, command string
		args            []string
	}{
		{"render-starlark", "render", append([]string{"-f", star, "--library", naming}, render...)},
		{"render-javascript", "render", append([]string{"-f", js, "--library", naming}, render...)},
		{"render-missing", "render", append([]string{"-f", star}, render...)},
		{"render-broken", "render", append([]string{"-f", js, "--library", broken}, render...)},
		{"run-starlark", "hook-run", []string{"-f", star, "--library", naming, "--request", req, "--compact"}},
		{"run-javascript", "hook-run", []string{"-f", js, "--library", naming, "--request", req, "--compact"}},
		{"run-in-f-file", "hook-run", []string{"-f", star, "-f", naming, "--request", req, "--compact"}},
		{"run-missing", "hook-run", []string{"-f", js, "--request", req}},
		{"run-broken", "hook-run", []string{"-f", star, "--library", broken, "--request", req}},
		{"run-namespaced", "hook-run", []string{"-f", ns, "--library", l + "naming-team-a.yaml", "--request", req, "--compact"}},
		{"run-namespaced-given-cluster", "hook-run", []string{"-f", ns, "--library", naming, "--request", req}},
		{"run-unparsable", "hook-run", []string{"-f", star, "--library", l + "unparsable.yaml", "--request", req}},
		{"run-misspelt", "hook-run", []string{"-f", star, "--library", l + "misspelt.yaml", "--request", req}},
		{"run-no-library", "hook-run", []string{"-f", star, "--library", l + "empty.yaml", "--request", req}},
		{"run-twice", "hook-run", []string{"-f", star, "-f", naming, "--library", naming, "--request", req}},
		{"test", "hook-test", []string{"--library", naming, td + "library-starlark_test.yaml", td + "library-javascript_test.yaml"}},
		{"test-missing", "hook-test", []string{td + "library-starlark_test.yaml"}},
		{"test-unreadable", "hook-test", []string{"--library", l + "absent.yaml", td + "library-starlark_test.yaml"}},
		{"validate", "validate", []string{star, js, "--library", naming}},
		{"validate-missing", "validate", []string{star, js}},
		{"validate-broken", "validate", []string{star, js, broken}},
		{"validate-namespaced", "validate", []string{ns, naming}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := commands[tt.command](tt.args, &stdout, &stderr)
			got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			checkGolden(t, "library-"+tt.golden, got)
		})
	}
}

// TestLibraryFlagInHelp checks that every command that builds hooks offers --library.
func TestLibraryFlagInHelp(t *testing.T) {
	for name, cmd := range map[string]func([]string, io.Writer, io.Writer) int{
		"render": renderCommand, "hook run": hookRun, "hook test": hookTest, "validate": validate,
	} {
		var stderr bytes.Buffer
		if code := cmd([]string{"-h"}, io.Discard, &stderr); code != exitOK || !strings.Contains(stderr.String(), "-library value") {
			t.Errorf("%s -h: exit %d, no --library flag in\n%s", name, code, stderr.String())
		}
	}
}
