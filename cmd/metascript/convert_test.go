package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConvert(t *testing.T) {
	const c = "testdata/convert/"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		// golden holds stdout, goldenErr stderr; wantStderr is a substring of stderr for cases
		// without goldenErr.
		golden, goldenErr string
		wantStderr        string
		// stdin, when set, is the file stdin reads.
		stdin string
	}{
		{name: "composite with three webhooks, a Service copied as written", args: []string{c + "composite.yaml"},
			wantCode: exitOK, golden: "convert-composite.out", wantStderr: "1 controller converted, 0 not converted"},
		{name: "decorator", args: []string{"-f", c + "decorator.yaml"},
			wantCode: exitOK, golden: "convert-decorator.out", wantStderr: "1 controller converted, 0 not converted"},
		{name: "JSON input", args: []string{c + "decorator.json"},
			wantCode: exitOK, golden: "convert-decorator-json.out", wantStderr: "1 controller converted, 0 not converted"},
		{name: "a List from kubectl get, server-set fields dropped", args: []string{c + "list.yaml"},
			wantCode: exitOK, golden: "convert-list.out", wantStderr: "1 controller converted, 0 not converted"},
		{name: "several files in order", args: []string{c + "decorator.yaml", c + "composite.yaml"},
			wantCode: exitOK, golden: "convert-several.out", wantStderr: "2 controllers converted, 0 not converted"},
		{name: "the reference's rolling update converts as is", args: []string{c + "catset.yaml"},
			wantCode: exitOK, golden: "convert-catset.out", goldenErr: "convert-catset.err"},
		{name: "fields and values Metascript does not take, each with its line", args: []string{c + "unconvertible.yaml"},
			wantCode: exitFailed, golden: "convert-unconvertible.out", goldenErr: "convert-unconvertible.err"},
		{name: "webhook settings, connections renamed", args: []string{c + "webhook-fields.yaml"},
			wantCode: exitOK, golden: "convert-webhook-fields.out", goldenErr: "convert-webhook-fields.err"},
		// Every hook inline: the hook server is unnecessary.
		{name: "inline starlark stubs", args: []string{c + "composite.yaml", c + "decorator.yaml", "--inline", "starlark"},
			wantCode: exitOK, golden: "convert-inline-starlark.out", goldenErr: "convert-inline-starlark.err",
			wantStderr: "2 controllers converted, 4 starlark stubs written, 0 not converted"},
		{name: "switch-over steps and hook servers, per controller", args: []string{c + "switchover.yaml"},
			wantCode: exitOK, golden: "convert-switchover.out", goldenErr: "convert-switchover.err"},
		{name: "stdin", args: []string{"-f", "-"}, stdin: c + "composite.yaml",
			wantCode: exitOK, golden: "convert-composite.out", wantStderr: "<stdin>:3: compositecontroller/hello-controller switching over:"},
		{name: "stdin as a plain argument, among files", args: []string{c + "decorator.yaml", "-"}, stdin: c + "composite.yaml",
			wantCode: exitOK, golden: "convert-several.out", wantStderr: "2 controllers converted"},
		{name: "stdin twice", args: []string{"-", "-f", "-"}, wantCode: exitUsage, wantStderr: "- (stdin) given twice"},
		{name: "inline javascript stubs", args: []string{"--inline=javascript", c + "composite.yaml", c + "decorator.yaml"},
			wantCode: exitOK, golden: "convert-inline-javascript.out", wantStderr: "4 javascript stubs written"},
		// Inlining replaces the webhook before the checks: nothing is reported of a webhook that is gone.
		{name: "inline one hook of one controller", args: []string{c + "webhook-fields.yaml", c + "composite.yaml",
			"--inline", "starlark", "--hook", "finalize", "--hook", "sync", "--controller", "compositecontroller/secure-controller"},
			wantCode: exitOK, golden: "convert-inline-one.out", wantStderr: "2 controllers converted, 1 starlark stub written, 0 not converted"},

		{name: "unreadable document: nothing written", args: []string{c + "composite.yaml", c + "broken.yaml"},
			wantCode: exitUsage, wantStderr: "testdata/convert/broken.yaml:1: yaml: line 5: did not find expected ',' or ']'\nmetascript convert: nothing written"},
		{name: "no such file", args: []string{c + "no-such-file.yaml"}, wantCode: exitUsage, wantStderr: "no-such-file.yaml: no such file or directory"},
		{name: "no files", args: nil, wantCode: exitUsage, wantStderr: "no files"},
		{name: "unknown language", args: []string{c + "composite.yaml", "--inline", "python"}, wantCode: exitUsage,
			wantStderr: `--inline "python": want starlark or javascript`},
		{name: "unknown hook", args: []string{c + "composite.yaml", "--inline", "starlark", "--hook", "map"}, wantCode: exitUsage,
			wantStderr: `--hook "map": want one of sync, finalize, customize`},
		{name: "--hook without --inline", args: []string{c + "composite.yaml", "--hook", "sync"}, wantCode: exitUsage,
			wantStderr: "--hook and --controller choose what --inline replaces"},
		{name: "no such controller", args: []string{c + "composite.yaml", "--inline", "starlark", "--controller", "nope"},
			wantCode: exitUsage, wantStderr: "--controller nope: no CompositeController or DecoratorController of that name"},
		{name: "help", args: []string{"-h"}, wantCode: exitOK, wantStderr: "Comments inside a converted document are lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.stdin != "" {
				f, err := os.Open(tt.stdin)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdin = f
				defer func() { stdin = os.Stdin }()
			}
			var stdout, stderr bytes.Buffer
			code := convertManifests(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if tt.golden != "" {
				checkGolden(t, tt.golden, stdout.String())
			} else if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			if tt.goldenErr != "" {
				checkGolden(t, tt.goldenErr, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.golden != "" && code != exitUsage {
				checkConverted(t, stdout.Bytes())
			}
		})
	}
}

// checkConverted checks converted output: validate passes on it, and converting it again
// finds no controller to convert and changes nothing.
func checkConverted(t *testing.T, out []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "converted.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := validate([]string{path}, &stdout, &stderr); code != exitOK {
		t.Errorf("validate of the output: exit code %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	code := convertManifests([]string{path}, &stdout, &stderr)
	if code == exitUsage || stdout.String() != string(out) || !strings.Contains(stderr.String(), "0 controllers converted") {
		t.Errorf("converting the output again: exit code %d, output changed: %v\nstderr:\n%s", code, stdout.String() != string(out), stderr.String())
	}
}

// TestConvertStubs checks that every stub compiles and, called, fails with its message.
func TestConvertStubs(t *testing.T) {
	for _, lang := range []string{"starlark", "javascript"} {
		t.Run(lang, func(t *testing.T) {
			if lang == "javascript" {
				requireJavaScript(t)
			}
			out := filepath.Join(t.TempDir(), "stubs.yaml")
			var stdout, stderr bytes.Buffer
			args := []string{"testdata/convert/composite.yaml", "testdata/convert/decorator.yaml", "--inline", lang, "-o", out}
			if code := convertManifests(args, &stdout, &stderr); code != exitOK || stdout.Len() > 0 {
				t.Fatalf("convert: exit code %d, stdout %q (want none with -o)\n%s", code, stdout.String(), stderr.String())
			}
			if code := validate([]string{out}, &stdout, &stderr); code != exitOK {
				t.Fatalf("validate: exit code %d\n%s", code, stdout.String())
			}
			for _, tc := range []struct{ controller, hook, request, webhook string }{
				{"hello-controller", "sync", "bundle.yaml", "http://hello-controller.hello/sync"},
				{"hello-controller", "finalize", "bundle.yaml", "http://hello-controller.hello/finalize"},
				{"hello-controller", "customize", "bundle.yaml", "http://hello-controller.hello:8080/customize"},
				{"service-per-pod", "sync", "decorator.yaml", "http://service-per-pod.metacontroller/sync-service-per-pod"},
			} {
				stdout.Reset()
				stderr.Reset()
				code := hookRun([]string{"-f", out, "--controller", tc.controller, "--hook", tc.hook,
					"--request", "testdata/requests/" + tc.request}, &stdout, &stderr)
				want := "hooks." + tc.hook + ": " + lang + " runtime error: "
				msg := "fill me in: hooks." + tc.hook + " is a stub in place of the webhook " + tc.webhook
				if code != exitFailed || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), msg) {
					t.Errorf("%s %s: exit code %d, stderr:\n%s\nwant 1 and %q ... %q", tc.controller, tc.hook, code, stderr.String(), want, msg)
				}
			}
		})
	}
}

// TestConvertKeepsMetascriptFields converts controllers that use every kind of field
// Metascript has, written as Metacontroller's: none may be reported or lost.
func TestConvertKeepsMetascriptFields(t *testing.T) {
	for _, name := range []string{"bundle-starlark.yaml", "shared-starlark.yaml", "hostile-starlark.yaml", "decorator-starlark.yaml", "shared-decorator.yaml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/controllers", name))
			if err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(t.TempDir(), name)
			data = bytes.ReplaceAll(data, []byte("apiVersion: metascript.dev/v1alpha1"), []byte("apiVersion: metacontroller.k8s.io/v1alpha1"))
			if err := os.WriteFile(in, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := convertManifests([]string{in}, &stdout, &stderr); code != exitOK {
				t.Errorf("exit code %d\n%s", code, stderr.String())
			}
			checkConverted(t, stdout.Bytes())
		})
	}
}
