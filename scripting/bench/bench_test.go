package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/benchsync"
)

func compile(b testing.TB, rt *scripting.Runtime, lang scripting.Language, file string) scripting.Program {
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	prog, err := rt.Compile(lang, file, string(src))
	if err != nil {
		b.Fatal(err)
	}
	return prog
}

// webhookServer serves goSync over HTTP with JSON, as a hook server would.
// inlineHooks are the sync logic of the benchmarks in each inline language.
var inlineHooks = []struct {
	lang scripting.Language
	file string
}{{scripting.Starlark, "testdata/sync.star"}, {scripting.JavaScript, "testdata/sync.js"}}

// TestSyncMatchesGo keeps the benchmarks honest: every implementation returns what the Go
// floor returns (numbers compared by value: the webhook's JSON has no integers).
func TestSyncMatchesGo(t *testing.T) {
	rt := engine.NewRuntime(scripting.Options{})
	srv := webhookServer()
	defer srv.Close()
	web := &hooks.Webhook{URL: srv.URL, Timeout: 10 * time.Second, Client: srv.Client()}
	for _, n := range []int{0, 10, 1000} {
		req := benchsync.Request(n)
		want, _ := json.Marshal(benchsync.Go(req))
		got := map[string]any{}
		for _, lang := range inlineHooks {
			v, err := compile(t, rt, lang.lang, lang.file).Call(context.Background(),
				scripting.Invocation{Function: "sync", Request: req})
			if err != nil {
				t.Fatal(err)
			}
			got[string(lang.lang)] = v
		}
		v, err := web.Invoke(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		got["webhook"] = v
		for impl, v := range got {
			if b, _ := json.Marshal(v); string(b) != string(want) {
				t.Errorf("children=%d: %s returns\n%s\nwant\n%s", n, impl, b, want)
			}
		}
	}
}

func webhookServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(benchsync.Go(req))
	}))
}

// BenchmarkSync compares one sync call per implementation; names are
// Sync/<impl>/children=<n> with impl in {go, starlark, javascript, webhook}.
func BenchmarkSync(b *testing.B) {
	rt := engine.NewRuntime(scripting.Options{})
	srv := webhookServer()
	defer srv.Close()
	web := &hooks.Webhook{URL: srv.URL, Timeout: 10 * time.Second, Client: srv.Client()}
	impls := []struct {
		name string
		call func(ctx context.Context, req map[string]any) error
	}{
		{"go", func(_ context.Context, req map[string]any) error { benchsync.Go(req); return nil }},
		{"webhook", func(ctx context.Context, req map[string]any) error {
			_, err := web.Invoke(ctx, req, nil)
			return err
		}},
	}
	for _, lang := range inlineHooks {
		prog := compile(b, rt, lang.lang, lang.file)
		impls = append(impls, struct {
			name string
			call func(ctx context.Context, req map[string]any) error
		}{string(lang.lang), func(ctx context.Context, req map[string]any) error {
			_, err := prog.Call(ctx, scripting.Invocation{Function: "sync", Request: req})
			return err
		}})
	}
	ctx := context.Background()
	for _, impl := range impls {
		for _, n := range []int{10, 1000} {
			req := benchsync.Request(n)
			b.Run(fmt.Sprintf("%s/children=%d", impl.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := impl.call(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSyncParts splits an inline call of BenchmarkSync: overhead is a hook that returns
// {} (what every call pays: runtime, budgets, request view), execution runs the same sync
// logic but returns only the number of children it built, so it converts next to nothing.
// What BenchmarkSync adds to execution is the conversion of the children.
func BenchmarkSyncParts(b *testing.B) {
	rt := engine.NewRuntime(scripting.Options{})
	ctx := context.Background()
	for _, lang := range inlineHooks {
		prog := compile(b, rt, lang.lang, lang.file)
		for _, part := range []string{"overhead", "execution"} {
			for _, n := range []int{10, 1000} {
				req := benchsync.Request(n)
				b.Run(fmt.Sprintf("%s/%s/children=%d", lang.lang, part, n), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := prog.Call(ctx, scripting.Invocation{Function: part, Request: req}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkRunaway reports how long each budget takes to stop a hostile hook: for the
// timeout, the milliseconds the hook ran past its deadline (ms-past-budget, from the
// BudgetError) and the call's whole overshoot (ms-call-past-budget); for memory, the bytes
// the process allocated during the call per byte of budget, mean (x-budget) and worst
// (x-budget-max).
func BenchmarkRunaway(b *testing.B) {
	rt := engine.NewRuntime(scripting.Options{})
	for _, lang := range []struct {
		lang scripting.Language
		file string
	}{{scripting.Starlark, "testdata/runaway.star"}, {scripting.JavaScript, "testdata/runaway.js"}} {
		prog := compile(b, rt, lang.lang, lang.file)
		budget := scripting.Budget{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 62, MaxStackDepth: 200, MaxMemory: 32 << 20}
		b.Run(string(lang.lang)+"/timeout", func(b *testing.B) {
			var past, callPast time.Duration
			for b.Loop() {
				start := time.Now()
				err := call(prog, "loop", budget)
				callPast += time.Since(start) - budget.Timeout
				if be := expectBudget(b, err, scripting.BudgetTimeout); be != nil {
					past += time.Duration(be.Used - be.Limit)
				}
			}
			// ms-past-budget: how long the hook ran past its deadline; ms-call-past-budget
			// adds what the call spent around the hook (making a runtime, converting).
			b.ReportMetric(float64(past.Microseconds())/1000/float64(b.N), "ms-past-budget")
			b.ReportMetric(float64(callPast.Microseconds())/1000/float64(b.N), "ms-call-past-budget")
		})
		b.Run(string(lang.lang)+"/stack", func(b *testing.B) {
			for b.Loop() {
				expectBudget(b, call(prog, "recurse", budget), scripting.BudgetStackDepth)
			}
		})
		b.Run(string(lang.lang)+"/memory", func(b *testing.B) {
			var sum, worst float64
			long := budget
			long.Timeout = 10 * time.Second
			for b.Loop() {
				allocs := scripting.StartMemoryWatch(0, nil)
				err := call(prog, "grow", long)
				ratio := float64(allocs.Stop()) / float64(long.MaxMemory)
				expectBudget(b, err, scripting.BudgetMemory)
				sum += ratio
				worst = max(worst, ratio)
			}
			// What the process allocated during the call, per byte of budget: on average
			// and in the worst call.
			b.ReportMetric(sum/float64(b.N), "x-budget")
			b.ReportMetric(worst, "x-budget-max")
		})
	}
}

func call(prog scripting.Program, fn string, budget scripting.Budget) error {
	_, err := prog.Call(context.Background(), scripting.Invocation{Function: fn, Request: benchsync.Request(1), Budget: budget,
		Log: slog.New(slog.DiscardHandler)})
	return err
}

func expectBudget(b *testing.B, err error, budget string) *scripting.BudgetError {
	var be *scripting.BudgetError
	if !errors.As(err, &be) || be.Budget != budget {
		b.Fatalf("want a %s budget error, got %v", budget, err)
	}
	return be
}
