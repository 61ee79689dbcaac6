package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	const c = "testdata/controllers/"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		// golden holds stdout; empty when the case checks stderr only.
		golden     string
		wantStderr string
	}{
		{name: "good controllers", args: []string{"-f", c + "bundle-starlark.yaml", "-f", c + "shared-starlark.yaml"},
			wantCode: exitOK, golden: "validate-good.out"},
		{name: "configMap source from another file", args: []string{c + "configmap-source.yaml", c + "configmaps.yaml"},
			wantCode: exitOK, golden: "validate-configmap.out"},
		{name: "configMap source missing", args: []string{"-f", c + "configmap-source.yaml"},
			wantCode: exitFailed, golden: "validate-configmap-missing.out"},
		{name: "syntax error, missing function, no source", args: []string{"-f", c + "broken-starlark.yaml"},
			wantCode: exitFailed, golden: "validate-broken.out"},
		{name: "shared script errors reported once", args: []string{"-f", c + "broken-shared.yaml"},
			wantCode: exitFailed, golden: "validate-broken-shared.out"},
		{name: "unknown field, two forms, bad url, no sync", args: []string{"-f", c + "invalid.yaml"},
			wantCode: exitFailed, golden: "validate-invalid.out"},
		{name: "every file, errors of each in file order", args: []string{"-f", c + "broken-starlark.yaml", "-f", c + "bundle-starlark.yaml", "-f", c + "invalid.yaml"},
			wantCode: exitFailed, golden: "validate-several.out"},
		{name: "good decorators among composites", args: []string{"-f", c + "bundle-starlark.yaml", "-f", c + "decorator-starlark.yaml", "-f", c + "shared-decorator.yaml"},
			wantCode: exitOK, golden: "validate-decorator-good.out"},
		// A syntax error, a missing function, a broken shared script, an unknown field, no sync.
		{name: "decorator problems, each located", args: []string{"-f", c + "broken-decorator.yaml", "-f", c + "invalid-decorator.yaml"},
			wantCode: exitFailed, golden: "validate-decorator-broken.out"},
		{name: "a map controller among the others", args: []string{"-f", c + "map-starlark.yaml", "-f", c + "decorator-starlark.yaml"},
			wantCode: exitOK, golden: "validate-map-good.out"},
		{name: "map problems: a syntax error, no map hook", args: []string{"-f", c + "broken-map.yaml"},
			wantCode: exitFailed, golden: "validate-map-broken.out"},
		{name: "unreadable file", args: []string{"-f", c + "no-such-file.yaml"},
			wantCode: exitFailed, golden: "validate-unreadable.out"},
		{name: "no controller in the files", args: []string{"-f", c + "configmaps.yaml"},
			wantCode: exitFailed, golden: "validate-none.out"},
		{name: "no files", args: nil, wantCode: exitUsage, wantStderr: "no files"},
		{name: "unknown flag", args: []string{"--bogus"}, wantCode: exitUsage, wantStderr: "flag provided but not defined: -bogus"},
		{name: "help", args: []string{"-h"}, wantCode: exitOK, wantStderr: "Usage: metascript validate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := validate(tt.args, &stdout, &stderr)
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
