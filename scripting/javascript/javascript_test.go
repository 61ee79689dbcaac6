package javascript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/hooktest"
	"metascript.dev/metascript/stdlib"
)

// testModules stands in for the stdlib modules: the bridge is tested here, the modules in
// package stdlib.
var testModules = indexModules([]*stdlib.Module{
	{Name: "strings", Functions: map[string]stdlib.Func{
		"upper": func(_ *stdlib.Env, args []any, _ []stdlib.Kwarg) (any, error) {
			if len(args) != 2 || args[1] != nil {
				return nil, fmt.Errorf("strings.upper: got %d arguments %v", len(args), args)
			}
			s, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("strings.upper: argument 1: expected string, got %T", args[0])
			}
			return strings.ToUpper(s), nil
		},
		"fail": func(*stdlib.Env, []any, []stdlib.Kwarg) (any, error) {
			return nil, errors.New("strings.fail: always fails")
		},
	}},
	{Name: "log", Functions: map[string]stdlib.Func{
		"info":  logTo(slog.LevelInfo),
		"error": logTo(slog.LevelError),
	}},
})

func logTo(level slog.Level) stdlib.Func {
	return func(env *stdlib.Env, args []any, _ []stdlib.Kwarg) (any, error) {
		env.Log.Log(context.Background(), level, args[0].(string))
		return nil, nil
	}
}

func newTestRuntime() *scripting.Runtime {
	return scripting.NewRuntime(scripting.Options{}, Compiler{modules: testModules})
}

func compileFixture(t testing.TB, rt *scripting.Runtime, file string) scripting.Program {
	t.Helper()
	return hooktest.Fixture(t, rt, scripting.JavaScript, file)
}

// testRequest returns a fresh request; tests compare it afterwards to prove it was not
// written.
var testRequest = hooktest.Request

func TestCompileErrors(t *testing.T) {
	deepParens := strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	arrows := "var f = " + strings.Repeat("x=>", 5000) + "1;"
	cases := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"syntax_error.js", "", 5, 7, "Unexpected token {"},
		{"redeclared.js", "", 5, 5, "Identifier 'x' has already been declared"},
		{"deep_parens.js", deepParens, 1, MaxNesting + 1, "brackets nests deeper"},
		{"arrow_chain.js", arrows, 1, -1, "expression nests deeper"},
		{"huge.js", "//" + strings.Repeat("x", MaxSourceBytes), 1, 1, "more than the limit"},
	}
	rt := newTestRuntime()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.src
			if src == "" {
				b, err := os.ReadFile("testdata/" + c.name)
				if err != nil {
					t.Fatal(err)
				}
				src = string(b)
			}
			_, err := rt.Compile(scripting.JavaScript, "cc/demo/"+c.name, src)
			var ce *scripting.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *CompileError", err)
			}
			if c.col < 0 {
				c.col = ce.Column
			}
			if ce.File != "cc/demo/"+c.name || ce.Line != c.line || ce.Column != c.col || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("got %s:%d:%d %q, want line %d col %d containing %q", ce.File, ce.Line, ce.Column, ce.Msg, c.line, c.col, c.msg)
			}
		})
	}
}

// TestSourceShapeAllowsLongCode: the nesting limit counts per statement, so long ordinary
// sources compile, with or without semicolons.
func TestSourceShapeAllowsLongCode(t *testing.T) {
	var asi, semi strings.Builder
	asi.WriteString("function sync(request) {\n  let x = 0\n")
	semi.WriteString("function sync(request) { let x = 0;")
	for range 5000 {
		asi.WriteString("  x = x + 1 - 0 * 1\n")
		semi.WriteString("x = x + 1 - 0 * 1;")
	}
	asi.WriteString("  return {x: x}\n}\n")
	semi.WriteString("return {x: x}; }")
	for name, src := range map[string]string{"asi.js": asi.String(), "semicolons.js": semi.String()} {
		p, err := NewCompiler().Compile(name, src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := p.Call(context.Background(), scripting.Invocation{Function: "sync"})
		if err != nil || !reflect.DeepEqual(v, map[string]any{"x": int64(5000)}) {
			t.Fatalf("%s: got %v, %v", name, v, err)
		}
	}
}

func TestFunctions(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "hooks.js")
	got := strings.Join(p.Functions(), ",")
	for _, want := range []string{"arrow", "counter", "echo", "mutate", "views"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("Functions() = %s, missing %s", got, want)
		}
	}
	if strings.Contains(","+got+",", ",notAFunction,") || strings.Contains(","+got+",", ",calls,") {
		t.Errorf("Functions() = %s lists a variable", got)
	}
}

func TestCall(t *testing.T) {
	rt := newTestRuntime()
	p := compileFixture(t, rt, "hooks.js")
	type check func(t *testing.T, v any, err error)
	want := func(w any) check {
		return func(t *testing.T, v any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, w) {
				t.Fatalf("got  %#v\nwant %#v", v, w)
			}
		}
	}
	runtimeErr := func(msg string) check {
		return func(t *testing.T, v any, err error) {
			t.Helper()
			var re *scripting.RuntimeError
			if !errors.As(err, &re) || !strings.Contains(re.Msg, msg) {
				t.Fatalf("got %v, %v; want RuntimeError containing %q", v, err, msg)
			}
		}
	}
	cases := []struct {
		fn    string
		check check
	}{
		{"counter", want(map[string]any{"calls": int64(1)})},
		{"counter", want(map[string]any{"calls": int64(1)})},
		{"echo", want(testRequest())},
		{"arrow", want(map[string]any{"kind": "arrow", "name": "demo"})},
		{"mutate", want(map[string]any{"parent": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "demo", "injected": "yes"}},
			"spec": map[string]any{"replicas": int64(4), "ratio": 0.5, "tags": []any{"A", "b", "c"},
				"extra": map[string]any{"added": true}},
		}})},
		{"views", want(map[string]any{
			"keys":    []any{"labels", "name"},
			"forIn":   []any{"labels", "name"},
			"spread":  map[string]any{"app": "demo", "more": int64(1)},
			"tags":    []any{"a", "b"},
			"mapped":  []any{"A", "B"},
			"joined":  "a+b",
			"isArray": true,
			"json":    `{"labels":{"app":"demo"},"name":"demo"}`,
			"same":    true,
			"has":     true,
			"length":  int64(2),
			"sliced":  []any{"b"},
			"entries": []any{[]any{"app", "demo"}},
			"ratio":   0.5,
			"missing": true,
		})},
		{"numbers", want(map[string]any{"int": int64(3), "neg": int64(-7), "float": 0.5, "integralFloat": int64(3),
			"big": int64(1 << 53), "bigint": int64(12), "nil": nil, "t": true, "s": "x"})},
		{"dates", want(map[string]any{"at": "1970-01-01T00:00:00.000Z", "now": int64(1_700_000_000_000)})},
		{"pollute", want(map[string]any{"done": true})},
		{"readPollution", want(map[string]any{"polluted": nil, "push": int64(1), "upper": "X", "leaked": "undefined",
			"implicitGlobal": "undefined", "json": `{"a":1}`, "frozen": true})},
		{"outside", func(t *testing.T, v any, err error) {
			if err != nil {
				t.Fatal(err)
			}
			for name, typ := range v.(map[string]any) {
				if typ != "undefined" {
					t.Errorf("%s is %v in hooks, want undefined", name, typ)
				}
			}
		}},
		{"requireStdlib", want(map[string]any{"same": true, "type": "object"})},
		{"requireFs", runtimeErr(`require: only stdlib modules (log, strings) and library modules (lib:LIBRARY/MODULE) can be required, not "fs"`)},
		{"evalCode", runtimeErr("eval is not defined")},
		{"functionCtor", runtimeErr("code generation from strings is disabled")},
		{"generatorCtor", runtimeErr("code generation from strings is disabled")},
		{"useStdlib", want("DEMO")},
		{"viewEdges", want(map[string]any{"keys": []any{"labels", "name"}, "name": "again",
			"tags": []any{"b", true, int64(3)}, "reversed": []any{"b", "a"}, "spec": []any{"ratio", "replicas", "tags"}})},
		{"builtinNames", want([]any{"repeat", "join", "padStart", "Array", "parse"})},
		{"stdlibFails", want(map[string]any{"caught": true, "message": "strings.fail: always fails"})},
		{"notAFunction", runtimeErr(`"notAFunction" in hooks.js is a number, not a function`)},
		{"missing", runtimeErr(`function "missing" is not defined in hooks.js`)},
	}
	clock := func() time.Time { return time.UnixMilli(1_700_000_000_000) }
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			req := testRequest()
			v, err := p.Call(context.Background(), scripting.Invocation{Function: c.fn, Request: req, Now: clock})
			c.check(t, v, err)
			if !reflect.DeepEqual(req, testRequest()) {
				t.Fatalf("the hook changed its request: %v", req)
			}
		})
	}
}

// TestResultOwned proves the result shares nothing with the request.
func TestResultOwned(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "hooks.js")
	req := testRequest()
	v, err := p.Call(context.Background(), scripting.Invocation{Function: "echo", Request: req})
	if err != nil {
		t.Fatal(err)
	}
	v.(map[string]any)["parent"].(map[string]any)["metadata"].(map[string]any)["name"] = "changed"
	v.(map[string]any)["parent"].(map[string]any)["spec"].(map[string]any)["tags"].([]any)[0] = "changed"
	if !reflect.DeepEqual(req, testRequest()) {
		t.Fatalf("the result aliases the request: %v", req)
	}
}

func TestRuntimeErrors(t *testing.T) {
	rt := newTestRuntime()
	p := compileFixture(t, rt, "hooks.js")
	cases := []struct {
		fn     string
		msg    string
		thrown any
		stack  []string // innermost first, "function file:line:col"
	}{
		{"throwError", "TypeError: bad parent demo", nil,
			[]string{"helper hooks.js:124:9", "throwError hooks.js:120:16"}},
		{"throwValue", `uncaught exception: object with 3 keys`,
			map[string]any{"code": int64(42), "reason": "nope", "list": []any{int64(1), "two"}},
			[]string{"throwValue hooks.js:128:3"}},
		{"throwString", `uncaught exception: "plain string"`, "plain string", []string{"throwString hooks.js:132:3"}},
		{"callsUndefined", "TypeError: Cannot read property 'deeper' of undefined", nil, []string{"callsUndefined hooks.js:136:33"}},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			_, err := p.Call(context.Background(), scripting.Invocation{Function: c.fn, Request: testRequest()})
			var re *scripting.RuntimeError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want *RuntimeError", err)
			}
			if !strings.Contains(re.Msg, c.msg) || !reflect.DeepEqual(re.Thrown, c.thrown) {
				t.Fatalf("got %q thrown %#v, want %q thrown %#v", re.Msg, re.Thrown, c.msg, c.thrown)
			}
			var got []string
			for _, f := range re.Stack {
				got = append(got, fmt.Sprintf("%s %s:%d:%d", f.Function, f.File, f.Line, f.Column))
			}
			if len(got) < len(c.stack) || !reflect.DeepEqual(got[:len(c.stack)], c.stack) {
				t.Fatalf("stack %q, want it to start with %q", got, c.stack)
			}
		})
	}
	t.Run("top level", func(t *testing.T) {
		p := compileFixture(t, rt, "toplevel_throw.js")
		_, err := p.Call(context.Background(), scripting.Invocation{Function: "sync"})
		var re *scripting.RuntimeError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "misconfigured") || len(re.Stack) < 2 ||
			re.Stack[0].Line != 4 || re.Stack[1] != (scripting.Frame{Function: "<top level>", File: "toplevel_throw.js", Line: 1, Column: 26}) {
			t.Fatalf("got %v (%#v), want misconfigured at 4 and 1:26", err, re)
		}
	})
}

func TestOutputErrors(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "output_errors.js")
	cases := []struct{ fn, path, msg string }{
		{"cyclic", "children[0].metadata.self", "cyclic"},
		{"fn", "children[3].metadata.name", "got a function"},
		{"nan", "status.ratio", "got NaN"},
		{"infinity", "status.values[2]", "got +Inf"},
		{"hugeBigInt", "status.n", "does not fit in 64 bits"},
		{"undefinedInArray", "children[1]", "got undefined"},
		{"symbol", `metadata.labels["app.kubernetes.io/name"]`, "got a symbol"},
		{"map", "data", "got a Map object"},
		{"proxyFn", "children[0]", "got a function"},
		{"cyclicRequest", "parent.spec.self", "cyclic"},
		{"deep", strings.Repeat("o.", scripting.MaxOutputDepth-1) + "o", "deeper than"},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			_, err := p.Call(context.Background(), scripting.Invocation{Function: c.fn, Request: testRequest()})
			var oe *scripting.OutputError
			if !errors.As(err, &oe) || oe.Path != c.path || !strings.Contains(oe.Msg, c.msg) {
				t.Fatalf("got %v, want OutputError at %s containing %q", err, c.path, c.msg)
			}
		})
	}
}

func TestBudgets(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "hostile.js")
	small := scripting.Budget{Timeout: 200 * time.Millisecond, MaxMemory: 32 << 20, MaxStackDepth: 200,
		MaxOutputObjects: 100_000}
	// prechecked cases are refused before the allocation: the process allocates little more
	// than the budget during the call. The others are stopped by the watchdog.
	const prechecked = true
	// interruptible cases run in a built-in that stops at its next step once the watchdog
	// stops the call (guard_iter.go): the process allocates less than 2 × the budget.
	interruptible := map[string]bool{"spreadSparse": true, "spreadString": true, "matchBomb": true,
		"replaceFnBomb": true}
	cases := []struct {
		fn         string
		budget     string
		prechecked bool
	}{
		{"infiniteLoop", scripting.BudgetTimeout, false},
		{"catchesBudget", scripting.BudgetTimeout, false},
		{"deepRecursion", scripting.BudgetStackDepth, false},
		{"stringBomb", scripting.BudgetMemory, prechecked},
		{"padBomb", scripting.BudgetMemory, prechecked},
		{"arrayBomb", scripting.BudgetMemory, prechecked},
		{"arrayCallBomb", scripting.BudgetMemory, prechecked},
		{"fillBomb", scripting.BudgetMemory, prechecked},
		{"joinBomb", scripting.BudgetMemory, prechecked},
		{"replaceBomb", scripting.BudgetMemory, prechecked},
		{"concatGrowth", scripting.BudgetMemory, prechecked},
		{"plusGrowth", scripting.BudgetMemory, prechecked},
		{"objectGrowth", scripting.BudgetMemory, false},
		{"pushGrowth", scripting.BudgetMemory, false},
		{"millionChildren", "", false}, // memory or output, whichever comes first
		{"sharedFanout", scripting.BudgetOutput, false},
		{"catastrophicRegexp", scripting.BudgetTimeout, false},
		{"sparseFrom", scripting.BudgetMemory, prechecked},
		{"catchesRefusal", scripting.BudgetMemory, prechecked},
		{"stringifyBomb", scripting.BudgetMemory, prechecked},
		{"localeBomb", scripting.BudgetMemory, false},
		{"stringConcatBomb", scripting.BudgetMemory, prechecked},
		{"templateGrowth", scripting.BudgetMemory, false},
		{"flatShared", scripting.BudgetMemory, prechecked},
		{"concatShared", scripting.BudgetMemory, prechecked},
		{"splitBomb", scripting.BudgetMemory, prechecked},
		{"splitRegexpBomb", scripting.BudgetMemory, prechecked},
		{"matchBomb", scripting.BudgetMemory, false},
		{"replaceFnBomb", scripting.BudgetMemory, false},
		{"regexpPatternBomb", scripting.BudgetMemory, prechecked},
		{"matchPatternBomb", scripting.BudgetMemory, prechecked},
		{"sparseIndexOf", scripting.BudgetMemory, prechecked},
		{"arrayLikeForEach", scripting.BudgetMemory, prechecked},
		{"sparseSort", scripting.BudgetMemory, prechecked},
		{"applyArrayLike", scripting.BudgetMemory, prechecked},
		{"concatSpreadable", scripting.BudgetMemory, prechecked},
		{"deepDelegation", scripting.BudgetStackDepth, false},
		{"spreadSparse", scripting.BudgetMemory, false},
		{"spreadString", scripting.BudgetMemory, false},
		{"upperBomb", scripting.BudgetMemory, prechecked},
		{"escapeBomb", scripting.BudgetMemory, prechecked},
		{"rawBomb", scripting.BudgetMemory, prechecked},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			b := small
			if c.budget != scripting.BudgetTimeout {
				// Room for the memory and output budgets to act first, even under -race.
				b.Timeout = 10 * time.Second
			}
			start := time.Now()
			allocs := scripting.StartMemoryWatch(0, nil)
			_, err := p.Call(context.Background(), scripting.Invocation{Function: c.fn, Budget: b})
			used := allocs.Stop()
			if c.prechecked && used > b.MaxMemory+b.MaxMemory/4 {
				t.Errorf("the process allocated %d bytes during the call, more than 1.25 × the budget", used)
			}
			if interruptible[c.fn] && used > 2*b.MaxMemory {
				t.Errorf("the process allocated %d bytes during the call, more than 2 × the budget", used)
			}
			var be *scripting.BudgetError
			if !errors.As(err, &be) {
				t.Fatalf("got %v, want *BudgetError", err)
			}
			if c.budget != "" && be.Budget != c.budget {
				t.Fatalf("got %v, want the %s budget", err, c.budget)
			}
			if be.Limit <= 0 || be.Used <= 0 || be.Unit == "" {
				t.Fatalf("budget error without limit, use or unit: %#v", be)
			}
			t.Logf("%s stopped after %v: %v", c.fn, time.Since(start), err)
		})
	}
	for _, fn := range []string{"bigIntPower", "bigIntShift", "bigIntAsUintN", "bigIntSquaring", "bigIntParse"} {
		t.Run(fn, func(t *testing.T) {
			b := small
			b.Timeout = 10 * time.Second // room for the size check to act first, even under -race on a busy machine
			allocs := scripting.StartMemoryWatch(0, nil)
			_, err := p.Call(context.Background(), scripting.Invocation{Function: fn, Budget: b})
			if used := allocs.Stop(); used > small.MaxMemory+small.MaxMemory/4 {
				t.Errorf("the process allocated %d bytes during the call, more than 1.25 × the budget", used)
			}
			var re *scripting.RuntimeError
			if !errors.As(err, &re) || !strings.Contains(re.Msg, "RangeError: Maximum BigInt size exceeded") {
				t.Fatalf("got %v, want a RangeError about the BigInt size", err)
			}
		})
	}
	t.Run("deepJSON", func(t *testing.T) {
		_, err := p.Call(context.Background(), scripting.Invocation{Function: "deepJSON", Budget: small})
		var re *scripting.RuntimeError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "nests deeper") {
			t.Fatalf("got %v, want a RuntimeError about nesting", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := p.Call(ctx, scripting.Invocation{Function: "infiniteLoop", Budget: small})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's error", err)
		}
	})
	t.Run("top level", func(t *testing.T) {
		p := compileFixture(t, newTestRuntime(), "toplevel_loop.js")
		_, err := p.Call(context.Background(), scripting.Invocation{Function: "sync", Budget: small})
		var be *scripting.BudgetError
		if !errors.As(err, &be) || be.Budget != scripting.BudgetTimeout || len(be.Stack) == 0 || be.Stack[0].Line != 1 {
			t.Fatalf("got %v, want a timeout at line 1", err)
		}
	})
}

func TestConsoleLogs(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "hooks.js")
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if _, err := p.Call(context.Background(), scripting.Invocation{Function: "logs", Log: log}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`level=INFO msg="hello {\"a\":1} [2]"`, `level=ERROR msg="bad 3"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log output %q lacks %q", out, want)
		}
	}
}

// TestParallel runs many invocations of every kind at once: state must not leak between
// them (run with -race).
func TestParallel(t *testing.T) {
	rt := newTestRuntime()
	hooks := compileFixture(t, rt, "hooks.js")
	hostile := compileFixture(t, rt, "hostile.js")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				req := testRequest()
				switch (g + i) % 4 {
				case 0:
					v, err := hooks.Call(context.Background(), scripting.Invocation{Function: "counter", Request: req})
					if err != nil || v.(map[string]any)["calls"] != int64(1) {
						errs <- fmt.Errorf("counter: %v %v", v, err)
					}
				case 1:
					if _, err := hooks.Call(context.Background(), scripting.Invocation{Function: "pollute", Request: req}); err != nil {
						errs <- err
					}
				case 2:
					v, err := hooks.Call(context.Background(), scripting.Invocation{Function: "readPollution", Request: req})
					if err != nil || v.(map[string]any)["polluted"] != nil || v.(map[string]any)["upper"] != "X" {
						errs <- fmt.Errorf("readPollution: %v %v", v, err)
					}
				case 3:
					_, err := hostile.Call(context.Background(), scripting.Invocation{Function: "infiniteLoop",
						Budget: scripting.Budget{Timeout: 5 * time.Millisecond}})
					var be *scripting.BudgetError
					if !errors.As(err, &be) {
						errs <- fmt.Errorf("infiniteLoop: %v", err)
					}
				}
				if !reflect.DeepEqual(req, testRequest()) {
					errs <- fmt.Errorf("request changed: %v", req)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStringify checks that JSON.stringify behind its guard (guard_stringify.go) makes what
// the ECMAScript specification says, and that its nesting is bounded.
func TestStringify(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "stringify.js")
	cases := []struct {
		fn   string
		want any
	}{
		{"plain", `{"b":1,"a":[1,"x",null,true,1.5],"c":{"d":"q\"\n\u0001é"}}`},
		{"skipped", `{"b":[null,null]}`},
		{"replacerFunction", `{"a":10,"b":"x","c":{"d":20}}`},
		{"replacerThis", `{"a":"a,b","b":2}`},
		{"propertyList", `{"c":{"a":3},"a":1,"d":[{"a":5}]}`},
		{"indented", "{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ]\n}"},
		{"indentedString", "{\n--\"a\": [\n----1\n--]\n}"},
		{"toJSON", `{"d":"key:d","t":"1970-01-01T00:00:00.000Z"}`},
		{"wrappers", `["s",3,false]`},
		{"topLevel", `"x" true null`},
		{"shared", `[{"x":1},{"x":1}] [{"x":1},{"x":1}]`},
		{"cycle", true},
		{"cycleListed", true},
		{"deep", "TypeError: JSON.stringify: value nests deeper than 1000 levels"},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			// What is checked is the result, not the time: a generous timeout keeps a busy
			// machine under the race detector from failing "deep".
			got, err := p.Call(context.Background(), scripting.Invocation{Function: c.fn, Budget: scripting.Budget{Timeout: 30 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	t.Run("stopped inside", func(t *testing.T) {
		// goja runs JSON.stringify to its end without checking for interrupts; the guard's
		// replacer ends it at the next value once the invocation is stopped.
		h := newHardRuntime()
		cs := &callState{h: h, rt: h.rt}
		h.cur = cs
		cs.watch.Start(context.Background(), scripting.JavaScript, "test", scripting.Budget{Timeout: time.Hour},
			ignoreCancel{})
		defer cs.watch.End()
		stringify, _ := goja.AssertFunction(h.global.Get("JSON").(*goja.Object).Get("stringify"))
		if _, err := stringify(goja.Undefined(), h.rt.ToValue(map[string]any{"a": 1})); err != nil {
			t.Fatalf("before the stop: %v", err)
		}
		cs.watch.Stop(scripting.StoppedContext)
		_, err := stringify(goja.Undefined(), h.rt.ToValue(map[string]any{"a": 1}))
		if err == nil || !strings.Contains(err.Error(), "JSON.stringify: the hook was stopped") {
			t.Fatalf("got %v, want the stop", err)
		}
	})
}
