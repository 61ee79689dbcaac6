package isolated_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
	"metascript.dev/metascript/scripting/javascript"
	"metascript.dev/metascript/scripting/starlark"
)

var languages = []struct {
	lang scripting.Language
	ext  string
}{{scripting.Starlark, ".star"}, {scripting.JavaScript, ".js"}}

// restarts counts worker replacements by reason.
type restarts struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *restarts) add(reason string) { r.mu.Lock(); r.n[reason]++; r.mu.Unlock() }
func (r *restarts) get() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps(r.n)
}

func maps(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// newPool starts a Pool of this test binary's workers, closed when the test ends.
func newPool(t testing.TB, opts isolated.Options) (*isolated.Pool, *restarts) {
	t.Helper()
	r := &restarts{n: map[string]int{}}
	if opts.Command == nil {
		opts.Command = workerCommand
	}
	if opts.Workers == 0 {
		opts.Workers = 1
	}
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = isolated.MinMemoryLimit
	}
	opts.Restarted = r.add
	p, err := isolated.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, r
}

func inProcess() *scripting.Runtime {
	return scripting.NewRuntime(scripting.Options{}, starlark.NewCompiler(), javascript.NewCompiler())
}

func source(t testing.TB, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCallsAsInProcess: a call through a worker returns what the same call in-process
// returns, value types included (an int stays an int64), fails with the same typed error,
// located alike, and logs the same lines.
func TestCallsAsInProcess(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{})
	rt := inProcess()
	for _, l := range languages {
		t.Run(string(l.lang), func(t *testing.T) {
			src := source(t, "testdata/hooks"+l.ext)
			remote, err := pool.Compile(l.lang, "hooks"+l.ext, src)
			if err != nil {
				t.Fatal(err)
			}
			local, err := rt.Compile(l.lang, "hooks"+l.ext, src)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(remote.Functions(), local.Functions()) {
				t.Errorf("functions %v, in-process %v", remote.Functions(), local.Functions())
			}
			req := map[string]any{"name": "demo", "n": int64(3), "ratio": 0.5, "tags": []any{"a", true, nil}}
			for _, fn := range []string{"echo", "fail"} {
				var remoteLog, localLog bytes.Buffer
				rv, rerr := remote.Call(context.Background(), scripting.Invocation{Function: fn, Request: req, Log: jsonLogger(&remoteLog)})
				lv, lerr := local.Call(context.Background(), scripting.Invocation{Function: fn, Request: req, Log: jsonLogger(&localLog)})
				if !reflect.DeepEqual(rv, lv) {
					t.Errorf("%s: got %#v, in-process %#v", fn, rv, lv)
				}
				if !reflect.DeepEqual(rerr, lerr) {
					t.Errorf("%s: got error %#v, in-process %#v", fn, rerr, lerr)
				}
				if rl, ll := withoutTime(t, &remoteLog), withoutTime(t, &localLog); rl != ll {
					t.Errorf("%s: logged %s, in-process %s", fn, rl, ll)
				}
			}
		})
	}
}

func jsonLogger(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// withoutTime is the log lines in buf without their time.
func withoutTime(t *testing.T, buf *bytes.Buffer) string {
	var out []string
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "time")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestCompileErrorsAsInProcess: a compile error in a worker is the *scripting.CompileError
// an in-process compile gives, at the same position, under the caller's name; a source the
// sandbox refuses (a load of os) is refused alike.
func TestCompileErrorsAsInProcess(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{})
	rt := inProcess()
	for _, tc := range []struct {
		lang   scripting.Language
		source string
	}{
		{scripting.Starlark, "def sync(request):\n    return {\n"},
		{scripting.Starlark, "load(\"os\", \"system\")\ndef sync(request):\n    return system(\"id\")\n"},
		{scripting.Starlark, "def sync(request):\n    return undefined_name\n"},
		{scripting.JavaScript, "function sync(request) {\n  return {;\n}\n"},
	} {
		for _, name := range []string{"first", "second"} { // the second is served from the Pool's memory
			_, rerr := pool.Compile(tc.lang, name, tc.source)
			_, lerr := rt.Compile(tc.lang, name, tc.source)
			var ce *scripting.CompileError
			if !errors.As(rerr, &ce) {
				t.Fatalf("%s %q: got %v, want a *scripting.CompileError", tc.lang, tc.source, rerr)
			}
			if !reflect.DeepEqual(rerr, lerr) {
				t.Errorf("%s %q: got %#v, in-process %#v", tc.lang, tc.source, rerr, lerr)
			}
		}
	}
}

// TestBudgetsApplyInWorker: the in-process budgets stop a runaway hook inside its worker,
// which goes on serving.
func TestBudgetsApplyInWorker(t *testing.T) {
	pool, r := newPool(t, isolated.Options{})
	for _, l := range languages {
		prog, err := pool.Compile(l.lang, "hooks"+l.ext, source(t, "testdata/hooks"+l.ext))
		if err != nil {
			t.Fatal(err)
		}
		_, err = prog.Call(context.Background(), scripting.Invocation{Function: "loop", Request: map[string]any{},
			Budget: scripting.Budget{Timeout: 100 * time.Millisecond, MaxSteps: 1 << 62}})
		var be *scripting.BudgetError
		if !errors.As(err, &be) || be.Budget != scripting.BudgetTimeout {
			t.Errorf("%s: got %v, want a timeout BudgetError", l.lang, err)
		}
	}
	if got := r.get(); len(got) != 0 {
		t.Errorf("workers replaced: %v", got)
	}
}

// TestSandboxUnchanged: a hook in a worker reaches nothing of the host the in-process sandbox
// hides.
func TestSandboxUnchanged(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{})
	prog, err := pool.Compile(scripting.JavaScript, "hooks.js", source(t, "testdata/hooks.js"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := prog.Call(context.Background(), scripting.Invocation{Function: "escape", Request: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	local, err := inProcess().Compile(scripting.JavaScript, "hooks.js", source(t, "testdata/hooks.js"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.Call(context.Background(), scripting.Invocation{Function: "escape", Request: map[string]any{}})
	if !reflect.DeepEqual(v, want) || v.([]any)[0] != "undefined" || strings.Contains(fmt.Sprint(v), "child_process,") {
		t.Errorf("got %v, want what the in-process sandbox gives, %v, none of it reached", v, want)
	}
}

// TestMemoryBombKillsOnlyTheWorker: a hook allocating past the worker's operating-system
// limit, its in-process memory budget raised out of the way, ends its worker with a
// *scripting.WorkerError naming the limit; this process lives on and the next call runs on a
// replacement worker.
func TestMemoryBombKillsOnlyTheWorker(t *testing.T) {
	huge := scripting.Budget{Timeout: 5 * time.Minute, MaxSteps: 1 << 62, MaxMemory: 1 << 40}
	pool, r := newPool(t, isolated.Options{Ceilings: huge})
	for _, l := range languages {
		t.Run(string(l.lang), func(t *testing.T) {
			prog, err := pool.Compile(l.lang, "hooks"+l.ext, source(t, "testdata/hooks"+l.ext))
			if err != nil {
				t.Fatal(err)
			}
			before := r.get()["memory"]
			_, err = prog.Call(context.Background(), scripting.Invocation{Function: "bomb", Request: map[string]any{}, Budget: huge})
			var we *scripting.WorkerError
			if !errors.As(err, &we) || !strings.Contains(we.Limit, "RLIMIT_AS") {
				t.Fatalf("got %v, want a WorkerError naming RLIMIT_AS", err)
			}
			t.Logf("the bomb: %v", err)
			if got := r.get()["memory"]; got != before+1 {
				t.Errorf("memory restarts %d, want %d", got, before+1)
			}
			v, err := prog.Call(context.Background(), scripting.Invocation{Function: "echo", Request: map[string]any{"name": "after"}})
			if err != nil || v.(map[string]any)["int"] != int64(5) {
				t.Errorf("the call after the bomb: %v, %v", v, err)
			}
		})
	}
}

// TestCPULimitEndsTheWorker: a call past its CPU time, its timeout raised out of the way,
// ends its worker with a WorkerError naming RLIMIT_CPU.
func TestCPULimitEndsTheWorker(t *testing.T) {
	long := scripting.Budget{Timeout: 5 * time.Minute, MaxSteps: 1 << 62, MaxMemory: 1 << 40}
	pool, r := newPool(t, isolated.Options{CPUTime: time.Second, Ceilings: long})
	prog, err := pool.Compile(scripting.Starlark, "hooks.star", source(t, "testdata/hooks.star"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.Call(context.Background(), scripting.Invocation{Function: "loop", Request: map[string]any{}, Budget: long})
	var we *scripting.WorkerError
	if !errors.As(err, &we) || !strings.Contains(we.Limit, "RLIMIT_CPU") {
		t.Fatalf("got %v, want a WorkerError naming RLIMIT_CPU", err)
	}
	if got := r.get()["cpu"]; got != 1 {
		t.Errorf("cpu restarts %d, want 1", got)
	}
	if _, err := prog.Call(context.Background(), scripting.Invocation{Function: "echo", Request: map[string]any{"name": "x"}}); err != nil {
		t.Errorf("the call after: %v", err)
	}
}

// TestCancelledCall: a call whose context ends returns the context's error; the worker stops
// the call and serves the next one.
func TestCancelledCall(t *testing.T) {
	pool, r := newPool(t, isolated.Options{})
	prog, err := pool.Compile(scripting.Starlark, "hooks.star", source(t, "testdata/hooks.star"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = prog.Call(ctx, scripting.Invocation{Function: "loop", Request: map[string]any{},
		Budget: scripting.Budget{Timeout: 20 * time.Second, MaxSteps: 1 << 62}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if _, err := prog.Call(context.Background(), scripting.Invocation{Function: "echo", Request: map[string]any{"name": "x"}}); err != nil {
		t.Errorf("the call after: %v", err)
	}
	if got := r.get(); len(got) != 0 {
		t.Errorf("workers replaced: %v; the worker answers a cancel", got)
	}
}

// TestConcurrentCalls: more callers than workers all get their answer.
func TestConcurrentCalls(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{Workers: 2})
	prog, err := pool.Compile(scripting.JavaScript, "hooks.js", source(t, "testdata/hooks.js"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			name := strings.Repeat("n", i+1)
			v, err := prog.Call(context.Background(), scripting.Invocation{Function: "echo", Request: map[string]any{"name": name}})
			if err == nil && v.(map[string]any)["request"].(map[string]any)["name"] != name {
				err = errors.New("another call's answer")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestClosedPool: a Pool refuses calls after Close.
func TestClosedPool(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{})
	prog, err := pool.Compile(scripting.Starlark, "hooks.star", source(t, "testdata/hooks.star"))
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if _, err := prog.Call(context.Background(), scripting.Invocation{Function: "echo", Request: map[string]any{"name": "x"}}); !errors.Is(err, isolated.ErrClosed) {
		t.Errorf("got %v, want ErrClosed", err)
	}
}

// TestMemoryLimitFloor: a Pool refuses a memory limit no worker can start under.
func TestMemoryLimitFloor(t *testing.T) {
	_, err := isolated.New(isolated.Options{Command: workerCommand, Workers: 1, MemoryLimit: 64 << 20})
	if err == nil || !strings.Contains(err.Error(), "below") {
		t.Errorf("got %v, want the floor named", err)
	}
}
