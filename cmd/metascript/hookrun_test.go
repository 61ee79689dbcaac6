package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"metascript.dev/metascript/cmd/metascript/internal/hooktest"
)

func TestHookRun(t *testing.T) {
	const (
		c      = "testdata/controllers/"
		bundle = c + "bundle-starlark.yaml"
		req    = "testdata/requests/bundle.yaml"
		// A DecoratorController runs through the same code path; these cases prove it does.
		decorator = c + "decorator-starlark.yaml"
		decReq    = "testdata/requests/decorator.yaml"
		// related given: the hostile controller's customize hook, which fails, is not called.
		related = "testdata/requests/bundle-related.yaml"
	)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		// wantJSON is the expected response, inline JSON or a file under testdata/.
		wantJSON string
		// wantStdout, when set, is the exact output (formatting checks).
		wantStdout string
		// wantStderr are substrings of stderr.
		wantStderr []string
	}{
		{name: "sync, YAML request", args: []string{"-f", bundle, "--hook", "sync", "--request", req},
			wantJSON: "testdata/responses/bundle.json", wantStderr: []string{`msg="syncing b with 2 items" source=print`}},
		{name: "sync is the default hook, JSON request", args: []string{"-f", bundle, "--request", "testdata/requests/bundle.json"},
			wantJSON: "testdata/responses/bundle.json"},
		{name: "finalize, compact", args: []string{"-f", bundle, "--hook", "finalize", "--request", req, "--compact"},
			wantStdout: `{"finalized":false,"status":{"remaining":1}}` + "\n"},
		{name: "indented by default", args: []string{"-f", bundle, "--hook", "finalize", "--request", req},
			wantStdout: "{\n  \"finalized\": false,\n  \"status\": {\n    \"remaining\": 1\n  }\n}\n"},
		{name: "flags after the request", args: []string{"--request", req, "-f", bundle, "--hook=finalize"},
			wantJSON: `{"finalized":false,"status":{"remaining":1}}`},
		{name: "shared script function", args: []string{"-f", c + "shared-starlark.yaml", "--hook", "customize", "--request", req},
			wantJSON: `{"children":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b-b"}}],"resyncAfterSeconds":30}`},
		{name: "configMap source in the same file", args: []string{"-f", c + "shared-starlark.yaml", "--hook", "finalize", "--request", req},
			wantJSON: `{"finalized":true}`},
		{name: "configMap source in another file", args: []string{"-f", c + "configmap-source.yaml", "-f", c + "configmaps.yaml", "--request", req},
			wantJSON: `{"status":{"parent":"b"}}`},
		{name: "one of several controllers", args: []string{"-f", c + "hostile-starlark.yaml", "--controller", "returns-nothing", "--request", req},
			wantCode: exitFailed, wantStderr: []string{
				"hostile-starlark.yaml: compositecontroller/returns-nothing hooks.sync: hook response: the hook returned nothing"}},

		{name: "compile error with position", args: []string{"-f", c + "broken-starlark.yaml", "--request", req},
			wantCode: exitFailed, wantStderr: []string{
				"testdata/controllers/broken-starlark.yaml:16:15: compositecontroller/broken spec.hooks.sync.starlark.source: got return, want ','\n"}},
		{name: "missing function", args: []string{"-f", c + "broken-starlark.yaml", "--hook", "finalize", "--request", req},
			wantCode: exitFailed, wantStderr: []string{`broken-starlark.yaml:19:9: compositecontroller/broken spec.hooks.finalize.starlark.function: no top-level function "cleanup" (defined: [finalize])`}},
		{name: "runtime error with the script's stack", args: []string{"-f", c + "hostile-starlark.yaml", "--controller", "hostile", "--hook", "customize", "--request", req},
			wantCode: exitFailed, wantStderr: []string{
				`compositecontroller/hostile hooks.customize: starlark runtime error: key "missing" not in dict`,
				"at compositecontroller/hostile/script:13:13 in helper",
				"at compositecontroller/hostile/script:16:18 in crash"}},
		{name: "fail() in the hook", args: []string{"-f", bundle, "--request", "testdata/requests/no-items.yaml"},
			wantCode: exitFailed, wantStderr: []string{"fail: spec.items is required", "at compositecontroller/bundle-starlark/hooks/sync:5:13 in sync"}},
		{name: "a failing customize hook leaves related empty", args: []string{"-f", c + "hostile-starlark.yaml", "--controller", "hostile", "--request", req},
			wantCode: exitFailed, wantStderr: []string{`metascript hook run: testdata/controllers/hostile-starlark.yaml: compositecontroller/hostile hooks.customize (for request.related, left {}; write related: in the request to set it): starlark runtime error: key "missing" not in dict`,
				"starlark hook exceeded its maxSteps budget: limit 10000 steps"}},
		{name: "step budget", args: []string{"-f", c + "hostile-starlark.yaml", "--controller", "hostile", "--request", related},
			wantCode: exitFailed, wantStderr: []string{"starlark hook exceeded its maxSteps budget: limit 10000 steps", "in spin"}},
		{name: "the engine's budget flags apply", args: []string{"-f", c + "hostile-starlark.yaml", "--controller", "hostile", "--request", related, "--ceiling-hook-max-steps", "500"},
			wantCode: exitFailed, wantStderr: []string{"exceeded its maxSteps budget: limit 500 steps"}},
		{name: "output error names the path", args: []string{"-f", c + "hostile-starlark.yaml", "--controller", "hostile", "--hook", "finalize", "--request", related},
			wantCode: exitFailed, wantStderr: []string{"invalid value at children[0].metadata.name: expected a JSON value", "got function"}},
		{name: "configMap source not given", args: []string{"-f", c + "configmap-source.yaml", "--request", req},
			wantCode: exitFailed, wantStderr: []string{"source in ConfigMap hooks/long-hooks is not in the given files"}},

		{name: "map hook by default for a map controller", args: []string{"-f", c + "map-starlark.yaml", "--request", "testdata/requests/map.yaml", "--compact"},
			wantStdout: `{"outputs":[{"apiVersion":"test.metascript.dev/v1","kind":"Copy","metadata":{"name":"a-copy"},"spec":{"key":"6f1c0c1e-0000-4000-8000-000000000001","value":"1"}}]}` + "\n"},
		{name: "tombstone hook", args: []string{"-f", c + "map-starlark.yaml", "--hook", "tombstone", "--request", "testdata/requests/map.yaml", "--compact"},
			wantStdout: `{"outputs":[]}` + "\n"},
		{name: "map compile error with position", args: []string{"-f", c + "broken-map.yaml", "--controller", "broken-map", "--request", "testdata/requests/map.yaml"},
			wantCode: exitFailed, wantStderr: []string{"broken-map.yaml:16:31: mapcontroller/broken-map spec.hooks.map.javascript.source: Unexpected token }"}},
		{name: "decorator sync, controller added to the request", args: []string{"-f", decorator, "--request", decReq},
			wantJSON: "testdata/responses/decorator.json", wantStderr: []string{`msg="decorating b with 2 items" source=print`}},
		{name: "decorator finalize, compact", args: []string{"-f", decorator, "--hook", "finalize", "--request", decReq, "--compact"},
			wantStdout: `{"attachments":[],"finalized":false,"labels":{"bundles.test.metascript.dev/items":null}}` + "\n"},
		{name: "decorator hook from the shared script", args: []string{"-f", c + "shared-decorator.yaml", "--request", decReq},
			wantJSON: `{"labels":{"bundles.test.metascript.dev/owner":"b"},"resyncAfterSeconds":30}`},
		{name: "decorator hook by function name in the shared script", args: []string{"-f", c + "shared-decorator.yaml", "--hook", "finalize", "--request", decReq},
			wantJSON: `{"labels":{"bundles.test.metascript.dev/owner":null},"finalized":true}`},
		{name: "a decorator among composites", args: []string{"-f", bundle, "-f", decorator, "--controller", "summary-starlark", "--request", decReq},
			wantJSON: "testdata/responses/decorator.json"},
		{name: "decorator compile error with position", args: []string{"-f", c + "broken-decorator.yaml", "--controller", "broken-decorator", "--request", decReq},
			wantCode: exitFailed, wantStderr: []string{
				"testdata/controllers/broken-decorator.yaml:19:38: decoratorcontroller/broken-decorator spec.hooks.sync.starlark.source: got '=', want ']'\n"}},
		{name: "decorator shared script compile error", args: []string{"-f", c + "broken-decorator.yaml", "--controller", "broken-shared-decorator", "--request", decReq},
			wantCode: exitFailed, wantStderr: []string{
				"broken-decorator.yaml:42:9: decoratorcontroller/broken-shared-decorator spec.script.starlark.source: got outdent, want '}'"}},
		{name: "fail() in a decorator hook", args: []string{"-f", decorator, "--request", "testdata/requests/decorator-no-items.yaml"},
			wantCode: exitFailed, wantStderr: []string{"fail: spec.items is required", "at decoratorcontroller/summary-starlark/hooks/sync:5:13 in sync"}},

		{name: "several controllers, none named", args: []string{"-f", c + "hostile-starlark.yaml", "--request", req},
			wantCode: exitUsage, wantStderr: []string{"several controllers (hostile, returns-nothing): name one"}},
		{name: "no such controller", args: []string{"-f", bundle, "--controller", "nope", "--request", req},
			wantCode: exitUsage, wantStderr: []string{`no controller named "nope" (found: bundle-starlark)`}},
		{name: "several controllers of two kinds, none named", args: []string{"-f", bundle, "-f", decorator, "--request", req},
			wantCode: exitUsage, wantStderr: []string{"several controllers (bundle-starlark, summary-starlark): name one"}},
		{name: "no such hook", args: []string{"-f", bundle, "--hook", "customize", "--request", req},
			wantCode: exitUsage, wantStderr: []string{"compositecontroller/bundle-starlark has no hooks.customize (defined: sync, finalize)"}},
		{name: "no such decorator hook", args: []string{"-f", decorator, "--hook", "customize", "--request", decReq},
			wantCode: exitUsage, wantStderr: []string{"decoratorcontroller/summary-starlark has no hooks.customize (defined: sync, finalize)"}},
		{name: "no -f", args: []string{"--request", req}, wantCode: exitUsage, wantStderr: []string{"-f CONTROLLER.yaml is required"}},
		{name: "no --request", args: []string{"-f", bundle}, wantCode: exitUsage, wantStderr: []string{"--request REQUEST.(json|yaml) is required"}},
		{name: "request is not an object", args: []string{"-f", bundle, "--request", "testdata/requests/not-an-object.yaml"},
			wantCode: exitUsage, wantStderr: []string{"expected the request object, got [1,2,3]"}},
		{name: "request file missing", args: []string{"-f", bundle, "--request", "testdata/requests/nope.yaml"},
			wantCode: exitUsage, wantStderr: []string{"no such file or directory"}},
		{name: "controller file missing", args: []string{"-f", c + "nope.yaml", "--request", req},
			wantCode: exitUsage, wantStderr: []string{"nope.yaml: no such file or directory"}},
		{name: "undecodable controller", args: []string{"-f", c + "invalid.yaml", "--controller", "no-sync", "--request", req},
			wantCode: exitUsage, wantStderr: []string{"invalid.yaml:2: compositecontroller/typo: unknown field spec.hooks.sync.starlark.sorce"}},
		{name: "undecodable decorator", args: []string{"-f", c + "invalid-decorator.yaml", "--controller", "no-sync", "--request", decReq},
			wantCode: exitUsage, wantStderr: []string{"invalid-decorator.yaml:2: decoratorcontroller/typo: unknown field spec.resources[0].labelSelecter"}},
		{name: "bad --now", args: []string{"-f", bundle, "--request", req, "--now", "yesterday"},
			wantCode: exitUsage, wantStderr: []string{"--now: want an RFC 3339 time"}},
		{name: "bad memory flag", args: []string{"-f", bundle, "--request", req, "--hook-max-memory", "lots"},
			wantCode: exitUsage, wantStderr: []string{"--hook-max-memory"}},
		{name: "stray argument", args: []string{"-f", bundle, "--request", req, "extra"},
			wantCode: exitUsage, wantStderr: []string{`unexpected arguments ["extra"]`}},
		{name: "help", args: []string{"-h"}, wantStderr: []string{"Usage: metascript hook run", "-request"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := hookRun(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr does not contain %q:\n%s", s, stderr.String())
				}
			}
			if tt.wantStdout != "" && stdout.String() != tt.wantStdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tt.wantStdout)
			}
			if tt.wantJSON != "" {
				checkJSON(t, stdout.Bytes(), tt.wantJSON)
			}
			if tt.wantCode != exitOK && stdout.Len() > 0 {
				t.Errorf("stdout of a failed run should be empty, got %s", stdout.String())
			}
		})
	}
}

// checkJSON compares got with want (inline JSON, or a file path) as JSON values.
func checkJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	wantData := []byte(want)
	if !strings.HasPrefix(want, "{") {
		var err error
		if wantData, err = os.ReadFile(want); err != nil {
			t.Fatal(err)
		}
	}
	w, err := hooktest.DecodeValue(wantData)
	if err != nil {
		t.Fatal(err)
	}
	g, err := hooktest.DecodeValue(got)
	if err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, got)
	}
	if d := hooktest.Diff(w, g); d != nil {
		t.Errorf("response differs:\n%s", strings.Join(d, "\n"))
	}
}

func TestHookRunStdinRequest(t *testing.T) {
	data, err := os.ReadFile("testdata/requests/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	stdin = bytes.NewReader(data)
	t.Cleanup(func() { stdin = os.Stdin })
	var stdout, stderr bytes.Buffer
	if code := hookRun([]string{"-f", "testdata/controllers/bundle-starlark.yaml", "--request", "-"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	checkJSON(t, stdout.Bytes(), "testdata/responses/bundle.json")
}

// TestHookRunWebhook: hook run calls webhook hooks as the engine does, the request as a
// JSON POST body, controller included.
func TestHookRunWebhook(t *testing.T) {
	var gotController string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		type named struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		var req struct{ Controller, Parent named }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		gotController = req.Controller.Metadata.Name
		if r.URL.Path == "/fail" {
			http.Error(w, "parent has no items", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, `{"status": {"seen": %q}, "children": []}`, req.Parent.Metadata.Name)
	}))
	defer srv.Close()
	dir := t.TempDir()
	ctrl := filepath.Join(dir, "webhook.yaml")
	writeFile(t, ctrl, fmt.Sprintf(`apiVersion: metascript.dev/v1alpha1
kind: CompositeController
metadata: {name: hooked}
spec:
  parentResource: {apiVersion: test.metascript.dev/v1, resource: bundles}
  hooks:
    sync: {webhook: {url: %q}}
    finalize: {webhook: {url: %q}}
`, srv.URL+"/sync", srv.URL+"/fail"))

	var stdout, stderr bytes.Buffer
	if code := hookRun([]string{"-f", ctrl, "--request", "testdata/requests/bundle.yaml"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	checkJSON(t, stdout.Bytes(), `{"status": {"seen": "b"}, "children": []}`)
	if gotController != "hooked" {
		t.Errorf("request.controller named %q, want the controller resource", gotController)
	}

	stdout.Reset()
	stderr.Reset()
	code := hookRun([]string{"-f", ctrl, "--hook", "finalize", "--request", "testdata/requests/bundle.yaml"}, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "/fail: HTTP 500: parent has no items") {
		t.Errorf("exit code %d, stderr %q; want 1 and the webhook's status and body", code, stderr.String())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHookRunWebhookCredentials: offline, a webhook takes its host's endpointConfigs entry,
// whose token Secret is in one of the files; validate names a Secret that is in none.
func TestHookRunWebhookCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"status": {"authorization": %q}, "extra": 1}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ctrl, secret := filepath.Join(dir, "webhook.yaml"), filepath.Join(dir, "secret.yaml")
	u, _ := url.Parse(srv.URL)
	writeFile(t, ctrl, fmt.Sprintf(`apiVersion: metascript.dev/v1alpha1
kind: CompositeController
metadata: {name: hooked}
spec:
  parentResource: {apiVersion: test.metascript.dev/v1, resource: bundles}
  endpointConfigs:
    - host: %s
      authorization: {secretRef: {name: token, namespace: ops, key: token}}
  hooks:
    sync: {webhook: {url: %q}}
`, u.Host, srv.URL+"/sync"))
	writeFile(t, secret, "apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: ops}\nstringData: {token: s3cret}\n")

	var stdout, stderr bytes.Buffer
	if code := hookRun([]string{"-f", ctrl, "-f", secret, "--request", "testdata/requests/bundle.yaml"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	// Loose by default: the unknown top-level field is dropped, as the engine would.
	checkJSON(t, stdout.Bytes(), `{"status": {"authorization": "Bearer s3cret"}}`)

	stdout.Reset()
	if code := validate([]string{"-f", ctrl}, &stdout, &stderr); code != exitFailed ||
		!strings.Contains(stdout.String(), "hooks.sync: endpointConfigs[0].authorization: Secret ops/token is not in the given files") {
		t.Errorf("validate exit code %d, stdout %q; want the missing Secret named", code, stdout.String())
	}
}
