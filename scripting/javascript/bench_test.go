package javascript

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/benchsync"
	"metascript.dev/metascript/scripting/internal/hooktest"
)

// ignoreCancel is a Canceler for a CallWatch started outside Program.Call: nothing to stop.
type ignoreCancel struct{}

func (ignoreCancel) Cancel(scripting.StopReason) {}

func compileBench(b testing.TB) scripting.Program {
	return hooktest.Fixture(b, scripting.NewRuntime(scripting.Options{}, NewCompiler()), scripting.JavaScript, "bench_sync.js")
}

// TestBenchSyncMatchesGo keeps the benchmark honest: both implementations return the same.
func TestBenchSyncMatchesGo(t *testing.T) {
	prog := compileBench(t)
	for _, n := range []int{0, 10, 1000} {
		req := benchsync.Request(n)
		got, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync", Request: req})
		if err != nil {
			t.Fatal(err)
		}
		if want := benchsync.Go(req); !reflect.DeepEqual(got, any(want)) {
			t.Fatalf("children=%d: javascript and Go differ:\n%v\n%v", n, got, want)
		}
	}
}

// BenchmarkSync compares the Go floor with the same logic in JavaScript through the public
// scripting API, conversion included.
func BenchmarkSync(b *testing.B) {
	hooktest.BenchSync(b, scripting.JavaScript, compileBench(b))
}

// BenchmarkRuntimeSetup measures what isolation costs: building a hardened Runtime (paid
// once per pooled Runtime, and again for each discarded one), and what a call pays on a
// pooled one before the hook runs (its global overlay, evaluating the program, looking up
// the function and calling an empty hook).
func BenchmarkRuntimeSetup(b *testing.B) {
	b.Run("goja.New", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			goja.New()
		}
	})
	b.Run("harden", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			newHardRuntime()
		}
	})
	prog, err := NewCompiler().Compile("x.js", "function sync(r) { return {} }")
	if err != nil {
		b.Fatal(err)
	}
	p := prog.(*Program)
	b.Run("pooled+call", func(b *testing.B) {
		b.ReportAllocs()
		h := newHardRuntime()
		for b.Loop() {
			cs := &callState{p: p, h: h, rt: h.rt}
			h.cur = cs
			cs.newGlobal()
			callSync(b, cs, nil)
		}
	})
}

// callSync runs cs's program and calls its sync with req, as Call does before it converts.
func callSync(b *testing.B, cs *callState, req map[string]any) goja.Value {
	wrapper, err := cs.rt.RunProgram(cs.p.prg)
	if err != nil {
		b.Fatal(err)
	}
	fn, err := cs.lookup(wrapper, "sync")
	if err != nil {
		b.Fatal(err)
	}
	v, err := fn(goja.Undefined(), cs.newRequest(req))
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkCallOverhead is the fixed cost of one call: a hook that returns an empty object.
func BenchmarkCallOverhead(b *testing.B) {
	prog, err := NewCompiler().Compile("empty.js", "function sync(request) { return {} }")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	req := benchsync.Request(10)
	for b.Loop() {
		if _, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync", Request: req}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConvert measures result conversion alone, on the value bench_sync.js returns.
func BenchmarkConvert(b *testing.B) {
	src, err := os.ReadFile("testdata/bench_sync.js")
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewCompiler().Compile("bench_sync.js", string(src))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 1000} {
		h := newHardRuntime()
		cs := &callState{p: p.(*Program), h: h, rt: h.rt}
		h.cur = cs
		cs.newGlobal()
		cs.watch.Start(context.Background(), scripting.JavaScript, "bench", scripting.Budget{Timeout: time.Hour},
			ignoreCancel{})
		v := callSync(b, cs, benchsync.Request(n))
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := newConverter(cs).convert(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		cs.watch.End()
	}
}
