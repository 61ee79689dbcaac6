package starlark

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"metascript.dev/metascript/scripting"
)

// goSync is the floor: bench_sync.star written in Go over the same JSON-shaped values.
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

func BenchmarkSync(b *testing.B) {
	src, err := os.ReadFile("testdata/bench_sync.star")
	if err != nil {
		b.Fatal(err)
	}
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	prog, err := rt.Compile(scripting.Starlark, "bench_sync.star", string(src))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 1000} {
		req := benchRequest(n)
		b.Run(fmt.Sprintf("go/children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				goSync(req)
			}
		})
		b.Run(fmt.Sprintf("starlark/children=%d", n), func(b *testing.B) {
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
		cs := newCallState(scripting.DefaultBudget, nil, nil)
		thread := cs.start("bench")
		v, err := callRecovered(thread, p.(*program).globals["sync"], newMapView(benchRequest(n)))
		cs.finish()
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
	req := benchRequest(10)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prog.Call(ctx, scripting.Invocation{Function: "sync", Request: req}); err != nil {
			b.Fatal(err)
		}
	}
}
