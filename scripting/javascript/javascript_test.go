package javascript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
)

func compileFixture(t testing.TB, rt *scripting.Runtime, file string) scripting.Program {
	t.Helper()
	src, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.Compile(scripting.JavaScript, file, string(src))
	if err != nil {
		t.Fatalf("compile %s: %v", file, err)
	}
	return p
}

// testRequest returns a fresh request; tests compare it afterwards to prove it was not
// written.
func testRequest() map[string]any {
	return map[string]any{
		"parent": map[string]any{
			"metadata": map[string]any{"name": "demo", "labels": map[string]any{"app": "demo"}},
			"spec":     map[string]any{"replicas": int64(3), "ratio": 0.5, "tags": []any{"a", "b"}},
		},
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		file      string
		line, col int
		msg       string
	}{
		{"syntax_error.js", 2, 17, "Unexpected identifier"},
		{"redeclared.js", 3, 7, "Identifier 'a' has already been declared"},
		{"toplevel_throw.js", 2, 9, "Error: misconfigured"},
		{"toplevel_loop.js", -1, -1, "timeout budget: limit 50ms"},
	}
	rt := scripting.NewRuntime(scripting.Options{}, &Compiler{InitBudget: scripting.Budget{Timeout: 50 * time.Millisecond}})
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile("testdata/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rt.Compile(scripting.JavaScript, "cc/demo/"+c.file, string(src))
			var ce *scripting.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *CompileError", err)
			}
			if c.line < 0 && ce.Line >= 2 && ce.Line <= 4 {
				// Interrupted somewhere in the loop.
				c.line, c.col = ce.Line, ce.Column
			}
			if ce.File != "cc/demo/"+c.file || ce.Line != c.line || ce.Column != c.col || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("got %s:%d:%d %q, want line %d col %d containing %q", ce.File, ce.Line, ce.Column, ce.Msg, c.line, c.col, c.msg)
			}
		})
	}
}

type check func(t *testing.T, v any, err error)

func value(want any) check {
	return func(t *testing.T, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("got %#v\nwant %#v", v, want)
		}
	}
}

func runtimeErr(msg string, thrown any, stack ...string) check {
	return func(t *testing.T, v any, err error) {
		t.Helper()
		var re *scripting.RuntimeError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, msg) {
			t.Fatalf("got %v, want RuntimeError containing %q", err, msg)
		}
		if !reflect.DeepEqual(re.Thrown, thrown) {
			t.Fatalf("thrown %#v, want %#v", re.Thrown, thrown)
		}
		var got []string
		for _, f := range re.Stack {
			got = append(got, fmt.Sprintf("%s:%s:%d:%d", f.Function, f.File, f.Line, f.Column))
		}
		if len(stack) > 0 && !reflect.DeepEqual(got, stack) {
			t.Fatalf("stack %v, want %v", got, stack)
		}
	}
}

func outputErr(path, msg string) check {
	return func(t *testing.T, v any, err error) {
		t.Helper()
		var oe *scripting.OutputError
		if !errors.As(err, &oe) || oe.Path != path || !strings.Contains(oe.Msg, msg) {
			t.Fatalf("got %v, want OutputError at %q containing %q", err, path, msg)
		}
	}
}

func TestCall(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "hooks.js")
	cases := []struct {
		function string
		budget   scripting.Budget
		check    check
	}{
		{"sync", scripting.Budget{}, value(map[string]any{
			"name": "demo", "labels": map[string]any{"app": "demo"}, "replicas": int64(3), "ratio": 0.5,
			"tags": []any{"a", "b"}, "empty": nil, "ok": true, "float3": int64(3), "big": int64(9007199254740993),
			"when": "2024-05-01T12:00:00.000Z"})},
		{"bump_counter", scripting.Budget{}, value(map[string]any{"length": int64(2), "calls": int64(1), "max": int64(100)})},
		{"mutate_request", scripting.Budget{}, value(map[string]any{
			"labels": map[string]any{"app": "demo", "added": "yes"}, "tags": []any{"a", "b", "extra"},
			"replicas": int64(4), "keys": []any{"new", "parent"},
			"spec": map[string]any{"replicas": int64(4), "tags": []any{"a", "b", "extra"}}})},
		{"read_views", scripting.Budget{}, value(map[string]any{
			"json": `{"labels":{"app":"demo"},"name":"demo"}`, "keys": []any{"labels", "name"}, "same": true,
			"is_array": true, "joined": "a+b", "spread_tags": []any{"a", "b", "c"}, "mapped": []any{"A", "B"},
			"copy":   map[string]any{"app": "demo"},
			"spread": map[string]any{"ratio": 0.5, "replicas": int64(3), "tags": []any{"a", "b"}, "extra": int64(1)},
			"has":    true, "has_own": true, "entries": []any{[]any{"app", "demo"}}, "missing": true, "length": int64(2)})},
		{"runtime_fail", scripting.Budget{}, runtimeErr("Error: bad value: 42", nil,
			"helper_fail:hooks.js:72:9", "runtime_fail:hooks.js:76:14")},
		{"runtime_type_error", scripting.Budget{}, runtimeErr("TypeError: Cannot read property 'name' of undefined", nil,
			"runtime_type_error:hooks.js:80:42")},
		{"throws_object", scripting.Budget{}, runtimeErr(`uncaught {"code":42,"reason":"nope"}`, map[string]any{"code": int64(42), "reason": "nope"},
			"throws_object:hooks.js:84:3")},
		{"throws_string", scripting.Budget{}, runtimeErr(`uncaught "plain"`, "plain", "throws_string:hooks.js:88:3")},
		{"missing", scripting.Budget{}, runtimeErr(`function "missing" is not defined in hooks.js`, nil)},
		{"NOT_A_FUNCTION", scripting.Budget{}, runtimeErr(`"NOT_A_FUNCTION" in hooks.js is a int64, not a function`, nil)},
		{"async_hook", scripting.Budget{}, value(map[string]any{"name": "demo"})},
		{"async_reject", scripting.Budget{}, runtimeErr("RangeError: rejected", nil)},
		{"never_settles", scripting.Budget{}, runtimeErr("promise that never settles", nil)},
		{"returns_function", scripting.Budget{}, outputErr("children[0].metadata.name", "got function")},
		{"returns_nan", scripting.Budget{}, outputErr("status.ratio", "NaN has no JSON form")},
		{"returns_inf", scripting.Budget{}, outputErr("spec[1]", "+Inf has no JSON form")},
		{"returns_huge_number", scripting.Budget{}, outputErr("children[2].spec.replicas", "does not fit in 64 bits")},
		{"returns_huge_bigint", scripting.Budget{}, outputErr("n", "BigInt 1180591620717411303424 does not fit in 64 bits")},
		{"returns_undefined_element", scripting.Budget{}, outputErr("items[1]", "undefined has no JSON form")},
		{"returns_hole", scripting.Budget{}, outputErr("items[1]", "undefined has no JSON form")},
		{"returns_symbol", scripting.Budget{}, outputErr("labels.s", "symbol x has no JSON form")},
		{"returns_map", scripting.Budget{}, outputErr("data", "got Map")},
		{"returns_undefined", scripting.Budget{}, outputErr("", "undefined has no JSON form")},
		{"returns_odd_keys", scripting.Budget{}, outputErr(`labels["app.kubernetes.io/name"]`, "got function")},
		{"returns_cycle", scripting.Budget{}, outputErr(strings.Repeat("self.", scripting.MaxOutputDepth-1)+"self", "cyclic")},
		{"returns_million_children", scripting.Budget{MaxMemory: 256 << 20, Timeout: 30 * time.Second}, func(t *testing.T, v any, err error) {
			var be *scripting.BudgetError
			if !errors.As(err, &be) || be.Budget != scripting.BudgetOutput || be.Unit != "objects" || be.Used != be.Limit+1 {
				t.Fatalf("got %v, want maxOutput budget error", err)
			}
		}},
		{"returns_request_parent", scripting.Budget{}, value(map[string]any{"copy": testRequest()["parent"]})},
	}
	for _, c := range cases {
		t.Run(c.function, func(t *testing.T) {
			// Twice: the second call must see fresh module state.
			for range 2 {
				req := testRequest()
				v, err := p.Call(context.Background(), scripting.Invocation{Function: c.function, Request: req, Budget: c.budget})
				c.check(t, v, err)
				if !reflect.DeepEqual(req, testRequest()) {
					t.Fatalf("request was modified: %#v", req)
				}
			}
		})
	}
}

func TestFunctions(t *testing.T) {
	p, err := NewCompiler().Compile("f.js", `
function sync(r) {}
var finalize = function (r) {};
const customize = (r) => ({});
let notAFunction = 1;
async function later() {}
if (true) { function nested() {} }
`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Functions(), []string{"customize", "finalize", "later", "sync"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Functions() = %v, want %v", got, want)
	}
	v, err := p.Call(context.Background(), scripting.Invocation{Function: "customize", Request: testRequest()})
	if err != nil || !reflect.DeepEqual(v, map[string]any{}) {
		t.Fatalf("customize: %v %v", v, err)
	}
}

func TestResultDoesNotAliasRequest(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "hooks.js")
	req := testRequest()
	v, err := p.Call(context.Background(), scripting.Invocation{Function: "returns_request_parent", Request: req})
	if err != nil {
		t.Fatal(err)
	}
	v.(map[string]any)["copy"].(map[string]any)["metadata"].(map[string]any)["name"] = "changed"
	if req["parent"].(map[string]any)["metadata"].(map[string]any)["name"] != "demo" {
		t.Fatal("result shares maps with the request")
	}
}

func TestTimeout(t *testing.T) {
	p, err := NewCompiler().Compile("loop.js", "function sync(r) {\n  var n = 0;\n  for (;;) {\n    n++;\n  }\n}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), scripting.Invocation{Function: "sync", Budget: scripting.Budget{Timeout: 20 * time.Millisecond}})
	var be *scripting.BudgetError
	if !errors.As(err, &be) || be.Budget != scripting.BudgetTimeout || be.Used < be.Limit || len(be.Stack) == 0 || be.Stack[0].Line < 3 {
		t.Fatalf("got %#v, want timeout budget error in the loop", err)
	}
}
