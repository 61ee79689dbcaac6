package main

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/engine/trace"
)

// TestTraceCommand reads a recorder through its handler, as from a running engine.
func TestTraceCommand(t *testing.T) {
	rec := trace.New()
	s := rec.Begin("compositecontroller/web", "ns/site", "child")
	s.Call("sync", "", "starlark", 0, trace.Used{Timeout: 5 * time.Second, Steps: 1234, MaxSteps: 1000000},
		map[string]any{"status": map[string]any{"ready": true}}, nil)
	s.Write("created", "ConfigMap ns/site-a", nil)
	s.Write("apply", "ConfigMap ns/site-b", errors.New(`admission webhook denied the request`))
	s.End(errors.New("1 write failed"))
	o := rec.Begin("compositecontroller/other", "ns/x", "resync")
	o.Call("sync", "", "javascript", 0, trace.Used{}, nil, errors.New("sync hook: TypeError: x is undefined at sync (sync.js:3:5)"))
	o.End(errors.New("sync hook failed"))
	srv := httptest.NewServer(rec.Handler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, c := range []struct {
		name     string
		args     []string
		code     int
		want     []string
		wantNot  []string
		onStderr string
	}{
		{name: "text, one controller", args: []string{"--addr", addr, "--controller", "compositecontroller/web"}, code: exitOK,
			want: []string{"compositecontroller/web ns/site (trigger: child)", "error: 1 write failed",
				`  call sync (starlark) 0s of 5s, 1234 of 1000000 steps: answered {"status":{"ready":true}}`,
				"  write created ConfigMap ns/site-a: ok", "  write apply ConfigMap ns/site-b: error: admission webhook denied the request"},
			wantNot: []string{"compositecontroller/other"}},
		{name: "a failed call", args: []string{"--addr", addr, "--parent", "ns/x"}, code: exitOK,
			want: []string{"(trigger: resync)", "call sync (javascript)", "error: sync hook: TypeError: x is undefined at sync (sync.js:3:5)"}},
		{name: "json", args: []string{"--addr", addr, "-o", "json", "--limit", "1"}, code: exitOK,
			want: []string{`"controller":"compositecontroller/other"`}, wantNot: []string{`"compositecontroller/web"`}},
		{name: "no engine there", args: []string{"--addr", "127.0.0.1:1"}, code: exitFailed,
			onStderr: "is 'metascript run' serving --debug-addr 127.0.0.1:1?"},
		{name: "bad output", args: []string{"-o", "yaml"}, code: exitUsage, onStderr: `-o "yaml": want text or json`},
	} {
		var stdout, stderr bytes.Buffer
		code := traceCommand(c.args, &stdout, &stderr)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %s", c.name, code, c.code, stderr.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, stdout.String())
			}
		}
		for _, w := range c.wantNot {
			if strings.Contains(stdout.String(), w) {
				t.Errorf("%s: output has %q:\n%s", c.name, w, stdout.String())
			}
		}
		if c.onStderr != "" && !strings.Contains(stderr.String(), c.onStderr) {
			t.Errorf("%s: stderr %q lacks %q", c.name, stderr.String(), c.onStderr)
		}
	}
}
