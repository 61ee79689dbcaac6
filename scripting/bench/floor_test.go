package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting/internal/benchsync"
)

// BenchmarkSyncFloor is what any inline JavaScript built on goja must pay for a sync call,
// whatever the adapter does around it: testdata/sync.js in a bare goja Runtime (no sandbox,
// no budgets, no guarded operators) over a request of plain JavaScript objects parsed once
// before the loop, so that nothing is converted on the way in. Names are
// SyncFloor/<part>/children=<n>:
//
//   - goja-execution runs sync and keeps its answer in the Runtime: nothing is converted out.
//   - goja-export adds goja's own Export of the answer to map[string]any, the cheapest way
//     out of the Runtime its API offers. It is not a valid converter (undefined becomes
//     null, symbols become strings, a shared object becomes one shared map), only a bound.
//
// Set against BenchmarkSync's javascript and webhook cases of the same run, these say how
// far the adapter's cost is goja's own.
func BenchmarkSyncFloor(b *testing.B) {
	src, err := os.ReadFile("testdata/sync.js")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 1000} {
		sync, req := bareGoja(b, string(src), benchsync.Request(n))
		b.Run(fmt.Sprintf("goja-execution/children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := sync(goja.Undefined(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("goja-export/children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				v, err := sync(goja.Undefined(), req)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := v.Export().(map[string]any); !ok {
					b.Fatalf("sync returned %v, not an object", v)
				}
			}
		})
	}
}

// TestSyncFloorMatchesGo keeps BenchmarkSyncFloor honest: the bare Runtime runs the same
// logic, to the same answer, as every case of BenchmarkSync.
func TestSyncFloorMatchesGo(t *testing.T) {
	src, err := os.ReadFile("testdata/sync.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 2, 10, 1000} {
		req := benchsync.Request(n)
		sync, jsReq := bareGoja(t, string(src), req)
		v, err := sync(goja.Undefined(), jsReq)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonicalJSON(t, v.Export()), canonicalJSON(t, benchsync.Go(req)); got != want {
			t.Errorf("children=%d: bare goja returns\n%s\nwant the Go floor's\n%s", n, got, want)
		}
	}
}

// bareGoja runs src in a new goja Runtime and returns its sync function and req as plain
// JavaScript objects (JSON.parse of req's JSON).
func bareGoja(b testing.TB, src string, req map[string]any) (goja.Callable, goja.Value) {
	b.Helper()
	rt := goja.New()
	if _, err := rt.RunString(src); err != nil {
		b.Fatal(err)
	}
	sync, ok := goja.AssertFunction(rt.Get("sync"))
	if !ok {
		b.Fatal("testdata/sync.js defines no sync function")
	}
	data, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	parse, _ := goja.AssertFunction(rt.Get("JSON").(*goja.Object).Get("parse"))
	v, err := parse(goja.Undefined(), rt.ToValue(string(data)))
	if err != nil {
		b.Fatal(err)
	}
	return sync, v
}
