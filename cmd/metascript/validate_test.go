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
		{name: "schema problems beside a compile error, as the docs show them", args: []string{"testdata/validate/update-method.yaml", "testdata/validate/misspelt.yaml"},
			wantCode: exitFailed, golden: "validate-schema.out"},
		{name: "unreadable file", args: []string{"-f", c + "no-such-file.yaml"},
			wantCode: exitUsage, golden: "validate-unreadable.out"},
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

// TestValidateAgreesWithTheAPIServer: what the API server would refuse is a problem, at the
// line and column of its field, named by its path; every problem of a document is reported,
// and its hooks are compiled even beside a schema problem.
func TestValidateAgreesWithTheAPIServer(t *testing.T) {
	const v = "testdata/validate/"
	memoryPattern := `'^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`
	tests := []struct {
		file     string
		want     []string
		wantCode int
	}{
		{"update-method.yaml", []string{
			`update-method.yaml:12:9: compositecontroller/update-method spec.childResources[0].updateStrategy.method: Unsupported value: "Inplace": supported values: "OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace"`,
			"1 controller, 1 hook, 1 problem"}, exitFailed},
		{"hook-version.yaml", []string{
			`hook-version.yaml:10:7: compositecontroller/hook-version spec.hooks.sync.version: Unsupported value: "v3": supported values: "v1", "v2"`,
			"1 controller, 1 hook, 1 problem"}, exitFailed},
		{"resync-negative.yaml", []string{
			"resync-negative.yaml:8:3: compositecontroller/resync-negative spec.resyncPeriodSeconds: Invalid value: -5: spec.resyncPeriodSeconds in body should be greater than or equal to 1",
			"1 controller, 1 hook, 1 problem"}, exitFailed},
		{"budget-steps.yaml", []string{
			"budget-steps.yaml:11:9: compositecontroller/budget-steps spec.hooks.sync.budget.maxSteps: Invalid value: -1: spec.hooks.sync.budget.maxSteps in body should be greater than or equal to 1",
			"1 controller, 1 hook, 1 problem"}, exitFailed},
		// The schema refuses the quantity; the engine cannot read the duration the schema lets pass.
		{"budget-units.yaml", []string{
			`budget-units.yaml:12:9: compositecontroller/budget-units spec.hooks.sync.budget.maxMemory: Invalid value: "lots": spec.hooks.sync.budget.maxMemory in body should match ` + memoryPattern,
			`budget-units.yaml:13:9: compositecontroller/budget-units spec.hooks.sync.budget.timeout: time: invalid duration "forever"`,
			"1 controller, 1 hook, 2 problems"}, exitFailed},
		// Both misspellings; the sync hook left without source; the syntax error beside them
		// at its place in the file (source line 3, past the block's end).
		{"misspelt.yaml", []string{
			"misspelt.yaml:8:3: compositecontroller/misspelt spec.resyncPeriodSecond: unknown field",
			"misspelt.yaml:10:5: compositecontroller/misspelt spec.hooks.sync: starlark has no source and the controller has no shared starlark script",
			"misspelt.yaml:12:9: compositecontroller/misspelt spec.hooks.sync.starlark.sorce: unknown field",
			"misspelt.yaml:19:40: compositecontroller/misspelt spec.hooks.finalize.starlark.source: got outdent, want '}'",
			"1 controller, 2 hooks, 4 problems"}, exitFailed},
		{"metacontroller.yaml", []string{
			"metacontroller.yaml:2:1: compositecontroller/bundle apiVersion: a Metacontroller manifest: run 'metascript convert'",
			"0 controllers, 0 hooks, 1 problem"}, exitFailed},
		{"list.yaml", []string{
			`list.yaml:7:5: compositecontroler/typo kind: no kind "CompositeControler" is served in metascript.dev/v1alpha1 (kinds: CompositeController, DecoratorController, MapController, NamespacedCompositeController, NamespacedDecoratorController, NamespacedMapController)`,
			`list.yaml:9:5: compositecontroller/future apiVersion: Unsupported value: "metascript.dev/v1beta1": supported values: "metascript.dev/v1alpha1"`,
			"list.yaml:14:5: decoratorcontroller metadata.name: Required value: name or generateName is required",
			"list.yaml:23:16: decoratorcontroller spec.hooks.sync.javascript.source: Unexpected end of input",
			"list.yaml:26:1: mapping values are not allowed in this context",
			"list.yaml:31:1: configmap/sources data.sync.star: expected a string",
			"1 controller, 1 hook, 6 problems"}, exitFailed},
		// A source that is no literal block: the source field, and the position in the source.
		{"json-source.json", []string{
			"json-source.json:3:35: compositecontroller/json spec.hooks.sync.starlark.source: 3:1: got outdent, want primary expression",
			"1 controller, 1 hook, 1 problem"}, exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := validate([]string{v + tt.file}, &stdout, &stderr)
			got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				if i < len(tt.want)-1 {
					w = v + w
				}
				want[i] = w
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
