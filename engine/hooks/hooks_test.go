package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/starlark"
)

func runtime() *scripting.Runtime {
	return scripting.NewRuntime(scripting.Options{}, starlark.NewCompiler())
}

func TestBuild(t *testing.T) {
	shared := &v1alpha1.SharedScript{Starlark: &v1alpha1.ScriptSource{Source: "def helper(request):\n    return {'from': 'shared'}\n"}}
	for _, tc := range []struct {
		name    string
		hook    string
		def     *v1alpha1.Hook
		shared  *v1alpha1.SharedScript
		want    string // the response's "from", when the build succeeds
		wantErr string
	}{
		{name: "inline", hook: "sync", def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{
			Source: "def sync(request):\n    return {'from': 'inline'}\n"}}, want: "inline"},
		{name: "named function", hook: "sync", def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{
			Source: "def other(request):\n    return {'from': 'other'}\n", Function: "other"}}, want: "other"},
		{name: "shared script", hook: "sync", shared: shared,
			def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{Function: "helper"}}, want: "shared"},
		{name: "no source, no shared", hook: "sync", def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{}},
			wantErr: "has no source and the controller has no shared starlark script"},
		{name: "missing function", hook: "finalize", def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{
			Source: "def sync(request):\n    return {}\n"}}, wantErr: `no top-level function "finalize"`},
		{name: "syntax error", hook: "sync", def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{
			Source: "def sync(request):\n    return {\n"}}, wantErr: "cc/x/hooks/sync:3:"},
		{name: "configMapRef without a cluster", hook: "sync", def: &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{
			ConfigMapRef: &v1alpha1.ConfigMapKeyRef{Namespace: "ns", Name: "cm", Key: "k"}}}, wantErr: "cannot be read here"},
		{name: "no form", hook: "sync", def: &v1alpha1.Hook{}, wantErr: "exactly one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := Build(context.Background(), Spec{Controller: "cc/x", Hook: tc.hook, Def: tc.def, Shared: tc.shared}, runtime(), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := inv.Invoke(context.Background(), map[string]any{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp["from"] != tc.want {
				t.Fatalf("response %v, want from=%s", resp, tc.want)
			}
		})
	}
}

func TestBudgetOf(t *testing.T) {
	steps, depth := int64(5), int32(7)
	mem := resourceQuantity(t, "1Mi")
	got := BudgetOf(&v1alpha1.Budget{Timeout: &metav1.Duration{Duration: time.Second}, MaxSteps: &steps, MaxStackDepth: &depth, MaxMemory: &mem})
	want := scripting.Budget{Timeout: time.Second, MaxSteps: 5, MaxStackDepth: 7, MaxMemory: 1 << 20}
	if got != want {
		t.Fatalf("BudgetOf = %+v, want %+v", got, want)
	}
	if BudgetOf(nil) != (scripting.Budget{}) {
		t.Fatal("nil budget must leave every field to the runtime's defaults")
	}
}

func TestWebhook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    map[string]any
		wantErr string
	}{
		{name: "integers stay integers", handler: func(w http.ResponseWriter, r *http.Request) {
			var req map[string]any
			_ = json.NewDecoder(r.Body).Decode(&req)
			w.Write([]byte(`{"status":{"n":3,"f":1.5,"echo":"` + req["parent"].(string) + `"}}`))
		}, want: map[string]any{"status": map[string]any{"n": int64(3), "f": 1.5, "echo": "p"}}},
		{name: "non-200", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}, wantErr: "HTTP 500: boom"},
		{name: "not JSON", handler: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) },
			wantErr: "decoding response"},
		{name: "not an object", handler: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("[]")) },
			wantErr: "expected an object"},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		}, wantErr: "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			w := &Webhook{URL: srv.URL, Timeout: 200 * time.Millisecond, Client: srv.Client()}
			got, err := w.Invoke(context.Background(), map[string]any{"parent": "p"}, nil)
			if tc.wantErr != "" {
				var we *WebhookError
				var re *ResponseError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !(errors.As(err, &we) || errors.As(err, &re)) {
					t.Fatalf("error %v, want a typed error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g, _ := json.Marshal(got); string(g) != mustJSON(tc.want) {
				t.Fatalf("response %s, want %s", g, mustJSON(tc.want))
			}
			if n := got["status"].(map[string]any)["n"]; n != int64(3) {
				t.Fatalf("integer decoded as %T", n)
			}
		})
	}
}

func TestNewWebhookServiceAddress(t *testing.T) {
	port, path, proto := int32(8443), "/sync", "https"
	inv, err := Build(context.Background(), Spec{Hook: "sync", Def: &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{
		Service: &v1alpha1.ServiceReference{Name: "hooks", Namespace: "ops", Port: &port, Protocol: &proto}, Path: &path}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := inv.(*Webhook); w.URL != "https://hooks.ops:8443/sync" {
		t.Fatalf("URL = %s", w.URL)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func resourceQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestWebhookTimeoutCapped: a webhook runs under the timeout its spec asks for, or the
// engine's ceiling when that is lower; without a ceiling, as asked.
func TestWebhookTimeoutCapped(t *testing.T) {
	url := "http://x"
	hour := &metav1.Duration{Duration: time.Hour}
	for _, tc := range []struct {
		def     *v1alpha1.Hook
		ceiling time.Duration
		want    time.Duration
	}{
		{&v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url}}, 30 * time.Second, DefaultWebhookTimeout},
		{&v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url, Timeout: hour}}, 30 * time.Second, 30 * time.Second},
		{&v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url}, Budget: &v1alpha1.Budget{Timeout: hour}}, 30 * time.Second, 30 * time.Second},
		{&v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url, Timeout: hour}}, 0, time.Hour},
	} {
		if got := WebhookTimeout(tc.def, tc.ceiling); got != tc.want {
			t.Errorf("WebhookTimeout(%+v, %s) = %s, want %s", tc.def.Webhook, tc.ceiling, got, tc.want)
		}
	}
}

func TestCapped(t *testing.T) {
	ceilings := scripting.Budget{Timeout: 30 * time.Second, MaxSteps: 1000, MaxStackDepth: 100, MaxMemory: 64 << 20}
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	mem := resource.MustParse("1Gi")
	inline := &v1alpha1.InlineScript{Source: "def sync(r):\n    return {}\n"}
	url := "http://x"
	for _, tc := range []struct {
		name string
		def  *v1alpha1.Hook
		want []string
	}{
		{"no budget", &v1alpha1.Hook{Starlark: inline}, nil},
		{"within", &v1alpha1.Hook{Starlark: inline, Budget: &v1alpha1.Budget{Timeout: dur(time.Second), MaxSteps: i64(1000)}}, nil},
		{"every field above", &v1alpha1.Hook{JavaScript: inline, Budget: &v1alpha1.Budget{Timeout: dur(time.Minute),
			MaxSteps: i64(1001), MaxStackDepth: i32(101), MaxMemory: &mem}}, []string{
			"budget.timeout 1m0s exceeds the engine's ceiling 30s",
			"budget.maxSteps 1001 exceeds the engine's ceiling 1000",
			"budget.maxStackDepth 101 exceeds the engine's ceiling 100",
			"budget.maxMemory 1Gi exceeds the engine's ceiling 64Mi"}},
		{"webhook within", &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url, Timeout: dur(time.Minute)}}, nil},
		{"webhook budget above", &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url}, Budget: &v1alpha1.Budget{Timeout: dur(time.Hour)}},
			[]string{"budget.timeout 1h0m0s exceeds the engine's webhook ceiling 1m0s"}},
		{"webhook timeout above", &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url, Timeout: dur(time.Hour)}, Budget: &v1alpha1.Budget{Timeout: dur(time.Second)}},
			[]string{"webhook.timeout 1h0m0s exceeds the engine's webhook ceiling 1m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Capped(tc.def, ceilings, time.Minute)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("Capped = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSourceMeter: a controller's distinct sources count once each, together, against the
// bound; a source that passes it is refused before it is compiled.
func TestSourceMeter(t *testing.T) {
	src := "def sync(r):\n    return {}\n" + strings.Repeat("# padding\n", 100)
	build := func(m *SourceMeter, hook string, def *v1alpha1.Hook, shared *v1alpha1.SharedScript) error {
		_, err := Build(context.Background(), Spec{Controller: "compositecontroller/c", Hook: hook, Def: def, Shared: shared, Sources: m},
			runtime(), nil)
		return err
	}
	shared := &v1alpha1.SharedScript{Starlark: &v1alpha1.ScriptSource{Source: src + "def finalize(r):\n    return {}\n"}}
	fromShared := &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{}}
	m := &SourceMeter{Max: int64(len(src) + 100)}       // room for the shared script, not for one more source
	for _, hook := range []string{"sync", "finalize"} { // one shared script, counted once
		if err := build(m, hook, fromShared, shared); err != nil {
			t.Fatalf("%s from the shared script: %v", hook, err)
		}
	}
	own := &v1alpha1.Hook{Starlark: &v1alpha1.InlineScript{Source: src, Function: "sync"}}
	var large *SourceTooLargeError
	if err := build(m, "customize", own, nil); !errors.As(err, &large) || large.Name != "compositecontroller/c/hooks/customize" {
		t.Fatalf("a source past the bound: %v, want a *SourceTooLargeError naming it", err)
	}
	if err := build(nil, "sync", own, nil); err != nil {
		t.Fatalf("without a meter: %v", err)
	}
}
