package starlark

import (
	"context"
	"fmt"
	"os"
	"testing"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/benchsync"
	"metascript.dev/metascript/scripting/internal/hooktest"
)

// BenchmarkSync compares the Go floor with the same logic in Starlark through the public
// scripting API, conversion included.
func BenchmarkSync(b *testing.B) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	hooktest.BenchSync(b, scripting.Starlark, hooktest.Fixture(b, rt, scripting.Starlark, "bench_sync.star"))
}

// BenchmarkConvert measures result conversion alone, on the value bench_sync.star returns.
func BenchmarkConvert(b *testing.B) {
	src, err := os.ReadFile("testdata/bench_sync.star")
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewCompiler().Compile("bench_sync.star", string(src))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 1000} {
		cs := &callState{}
		thread := cs.start(context.Background(), "bench", scripting.DefaultBudget)
		v, err := callRecovered(thread, p.(*program).globals["sync"], newMapView(benchsync.Request(n)))
		cs.watch.End()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				meter := scripting.NewOutputMeter(scripting.Starlark, scripting.DefaultBudget)
				if _, err := toGo(v, &meter); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallOverhead measures what every call pays whatever the hook does: thread,
// budgets, request view, result conversion of an empty dict.
func BenchmarkCallOverhead(b *testing.B) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	prog, err := rt.Compile(scripting.Starlark, "empty.star", "def sync(request):\n    return {}\n")
	if err != nil {
		b.Fatal(err)
	}
	req := benchsync.Request(10)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prog.Call(ctx, scripting.Invocation{Function: "sync", Request: req}); err != nil {
			b.Fatal(err)
		}
	}
}
