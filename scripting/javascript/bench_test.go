package javascript

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
)

// goSync is the floor: testdata/bench_sync.js written in Go over the same JSON-shaped
// values (the same logic as the Starlark adapter's floor).
func goSync(req map[string]any) map[string]any {
	parent := req["parent"].(map[string]any)
	meta := parent["metadata"].(map[string]any)
	spec := parent["spec"].(map[string]any)
	tmpl := spec["template"].(map[string]any)
	name := meta["name"].(string)
	n := spec["replicas"].(int64)
	children := make([]any, 0, n)
	for i := range n {
		tl := tmpl["labels"].(map[string]any)
		labels := make(map[string]any, len(tl)+2)
		for k, v := range tl {
			labels[k] = v
		}
		labels["app.kubernetes.io/instance"] = name
		labels["index"] = strconv.FormatInt(i, 10)
		children = append(children, map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": name + "-" + strconv.FormatInt(i, 10), "namespace": meta["namespace"], "labels": labels},
			"data":       map[string]any{"image": tmpl["image"], "command": tmpl["command"], "index": strconv.FormatInt(i, 10)},
		})
	}
	return map[string]any{"status": map[string]any{"replicas": int64(len(children))}, "children": children}
}

func benchRequest(n int) map[string]any {
	return map[string]any{
		"controller": map[string]any{"metadata": map[string]any{"name": "cc"}},
		"parent": map[string]any{
			"apiVersion": "example.com/v1", "kind": "App",
			"metadata": map[string]any{"name": "app", "namespace": "default", "uid": "1234",
				"labels": map[string]any{"team": "a"}},
			"spec": map[string]any{"replicas": int64(n), "template": map[string]any{
				"labels":  map[string]any{"app": "demo", "tier": "web", "version": "v1"},
				"image":   "nginx:1.27",
				"command": "serve",
			}},
		},
		"children": map[string]any{},
	}
}

func compileBench(b testing.TB) scripting.Program {
	src, err := os.ReadFile("testdata/bench_sync.js")
	if err != nil {
		b.Fatal(err)
	}
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	prog, err := rt.Compile(scripting.JavaScript, "bench_sync.js", string(src))
	if err != nil {
		b.Fatal(err)
	}
	return prog
}

// TestBenchSyncMatchesGo keeps the benchmark honest: both implementations return the same.
func TestBenchSyncMatchesGo(t *testing.T) {
	prog := compileBench(t)
	for _, n := range []int{0, 10, 1000} {
		req := benchRequest(n)
		got, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync", Request: req})
		if err != nil {
			t.Fatal(err)
		}
		if want := goSync(req); !reflect.DeepEqual(got, any(want)) {
			t.Fatalf("children=%d: javascript and Go differ:\n%v\n%v", n, got, want)
		}
	}
}

// BenchmarkSync compares the Go floor with the same logic in JavaScript through the public
// scripting API, conversion included.
func BenchmarkSync(b *testing.B) {
	prog := compileBench(b)
	for _, n := range []int{10, 1000} {
		req := benchRequest(n)
		b.Run(fmt.Sprintf("go/children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				goSync(req)
			}
		})
		b.Run(fmt.Sprintf("javascript/children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := prog.Call(ctx, scripting.Invocation{Function: "sync", Request: req}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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
			cs := &callState{p: p, budget: scripting.DefaultBudget, h: h, rt: h.rt}
			h.cur = cs
			cs.newGlobal()
			callOnce(b, cs)
		}
	})
}

func callOnce(b *testing.B, cs *callState) {
	wrapper, err := cs.rt.RunProgram(cs.p.prg)
	if err != nil {
		b.Fatal(err)
	}
	fn, err := cs.lookup(wrapper, "sync")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fn(goja.Undefined(), cs.newRequest(nil)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCallOverhead is the fixed cost of one call: a hook that returns an empty object.
func BenchmarkCallOverhead(b *testing.B) {
	prog, err := NewCompiler().Compile("empty.js", "function sync(request) { return {} }")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	req := benchRequest(10)
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
		cs := &callState{p: p.(*Program), budget: scripting.DefaultBudget, h: h, rt: h.rt}
		h.cur = cs
		cs.newGlobal()
		cs.watch = scripting.StartMemoryWatch(0, nil)
		wrapper, err := cs.rt.RunProgram(cs.p.prg)
		if err != nil {
			b.Fatal(err)
		}
		fn, err := cs.lookup(wrapper, "sync")
		if err != nil {
			b.Fatal(err)
		}
		v, err := fn(goja.Undefined(), cs.newRequest(benchRequest(n)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := newConverter(cs).convert(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		cs.watch.Stop()
	}
}
