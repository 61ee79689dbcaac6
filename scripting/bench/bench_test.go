package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/benchsync"
	"metascript.dev/metascript/scripting/internal/hooktest"
	"metascript.dev/metascript/scripting/isolated"
)

// workerEnv makes this test binary an isolated-tier worker (`metascript hook-worker`).
const workerEnv = "METASCRIPT_BENCH_ISOLATED_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(isolated.Serve(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// isolatedPool starts the isolated tier with one worker, this binary re-executed, under
// the defaults of metascript run (512Mi per worker).
func isolatedPool(t testing.TB) *isolated.Pool {
	t.Helper()
	p, err := isolated.New(isolated.Options{Workers: 1, MemoryLimit: 512 << 20, CPUTime: 30 * time.Second,
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), workerEnv+"=1")
			return cmd
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// isolatedFixture compiles testdata/<file> in the isolated tier.
func isolatedFixture(t testing.TB, p *isolated.Pool, lang scripting.Language, file string) scripting.Program {
	t.Helper()
	src, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := p.Compile(lang, file, string(src))
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// inlineHooks are the sync logic of the benchmarks in each inline language.
var inlineHooks = []struct {
	lang scripting.Language
	file string
}{{scripting.Starlark, "sync.star"}, {scripting.JavaScript, "sync.js"}}

// TestSyncMatchesGo keeps the benchmarks honest: they must all measure the same work.
//
// The Go floor is checked against testdata/sync-2.json, written by hand from the sync logic
// rather than by the floor itself. Every other implementation is then checked against the
// floor at each size the benchmarks use: the inline hooks run their own logic; the webhook
// serves the floor, so what it is checked for is the path around it, which the benchmark
// times: the request the server decodes is the one sent, and the answer the client returns
// equals the floor's answer computed here, in this process, from the original request.
// Numbers compare by value: the webhook's JSON has no integers.
func TestSyncMatchesGo(t *testing.T) {
	golden, err := os.ReadFile("testdata/sync-2.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonicalJSON(t, benchsync.Go(benchsync.Request(2))), canonicalJSON(t, json.RawMessage(golden)); got != want {
		t.Fatalf("the Go floor returns\n%s\nwant testdata/sync-2.json\n%s", got, want)
	}
	rt := engine.NewRuntime(scripting.Options{})
	pool := isolatedPool(t)
	received := make(chan []byte, 1) // the body of the last request, one request at a time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		received <- body
		serveFloor(w, body)
	}))
	defer srv.Close()
	web := &hooks.Webhook{URL: srv.URL, Timeout: 10 * time.Second, Client: srv.Client()}
	for _, n := range []int{0, 2, 10, 1000} {
		req := benchsync.Request(n)
		want := canonicalJSON(t, benchsync.Go(req))
		got := map[string]any{}
		for _, lang := range inlineHooks {
			v, err := hooktest.Fixture(t, rt, lang.lang, lang.file).Call(context.Background(),
				scripting.Invocation{Function: "sync", Request: req})
			if err != nil {
				t.Fatal(err)
			}
			got[string(lang.lang)] = v
			v, err = isolatedFixture(t, pool, lang.lang, lang.file).Call(context.Background(),
				scripting.Invocation{Function: "sync", Request: req})
			if err != nil {
				t.Fatal(err)
			}
			got["isolated-"+string(lang.lang)] = v
		}
		v, err := web.Invoke(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if body, sent := <-received, canonicalJSON(t, req); canonicalJSON(t, json.RawMessage(body)) != sent {
			t.Errorf("children=%d: the webhook server received\n%s\nwant the request\n%s", n, body, sent)
		}
		got["webhook"] = v
		for impl, v := range got {
			if b := canonicalJSON(t, v); b != want {
				t.Errorf("children=%d: %s returns\n%s\nwant the Go floor's\n%s", n, impl, b, want)
			}
		}
	}
}

// canonicalJSON is v as JSON with object keys sorted and every number a float64, so that
// equal values compare equal whatever produced them.
func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// serveFloor answers a sync request (JSON) with the Go floor's response, as a hook server
// would.
func serveFloor(w http.ResponseWriter, body []byte) {
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(benchsync.Go(req))
}

// webhookServer serves the Go floor over HTTP with JSON, as a hook server would.
func webhookServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		serveFloor(w, body)
	}))
}

// BenchmarkSync compares one sync call per implementation; names are
// Sync/<impl>/children=<n> with impl in {go, starlark, javascript, webhook,
// isolated-starlark, isolated-javascript}. The isolated cases run in one worker process of
// the isolated tier; their allocations and CPU time are the engine's side only. cpu-ns/op is
// the process's CPU time per call (reportCPU).
func BenchmarkSync(b *testing.B) {
	rt := engine.NewRuntime(scripting.Options{})
	pool := isolatedPool(b)
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
		prog := hooktest.Fixture(b, rt, lang.lang, lang.file)
		impls = append(impls, struct {
			name string
			call func(ctx context.Context, req map[string]any) error
		}{string(lang.lang), func(ctx context.Context, req map[string]any) error {
			_, err := prog.Call(ctx, scripting.Invocation{Function: "sync", Request: req})
			return err
		}})
	}
	for _, lang := range inlineHooks {
		prog := isolatedFixture(b, pool, lang.lang, lang.file)
		impls = append(impls, struct {
			name string
			call func(ctx context.Context, req map[string]any) error
		}{"isolated-" + string(lang.lang), func(ctx context.Context, req map[string]any) error {
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
				defer reportCPU(b)()
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
		prog := hooktest.Fixture(b, rt, lang.lang, lang.file)
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
	}{{scripting.Starlark, "runaway.star"}, {scripting.JavaScript, "runaway.js"}} {
		prog := hooktest.Fixture(b, rt, lang.lang, lang.file)
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
