package starlark

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/hooktest"
)

func compileFixture(t testing.TB, rt *scripting.Runtime, file string) scripting.Program {
	t.Helper()
	return hooktest.Fixture(t, rt, scripting.Starlark, file)
}

// testRequest returns a fresh request; tests compare it afterwards to prove it was not
// written.
var testRequest = hooktest.Request

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		file      string
		line, col int
		msg       string
	}{
		{"syntax_error.star", 4, 1, "got def"},
		{"resolve_error.star", 2, 12, "undefined: undefined_name"},
		{"load_os.star", 1, 1, `only stdlib modules (`},
		// Cancelled between steps: go.starlark.net locates the last instruction it ran,
		// which need not be on the loop's line.
		{"toplevel_loop.star", -1, -1, "maxSteps budget: limit 100000 steps"},
		{"toplevel_fail.star", 2, 9, "misconfigured"},
		{"huge.star", 1, 1, "more than the limit"},
	}
	rt := scripting.NewRuntime(scripting.Options{}, &Compiler{InitBudget: scripting.Budget{MaxSteps: 100_000}})
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile("testdata/" + c.file)
			if c.file == "huge.star" {
				src, err = []byte("x = 1"+strings.Repeat(" + 1", MaxSourceBytes/4)+"\n"), nil
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = rt.Compile(scripting.Starlark, "cc/demo/"+c.file, string(src))
			var ce *scripting.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *CompileError", err)
			}
			if c.line < 0 && ce.Line > 0 {
				c.line, c.col = ce.Line, ce.Column
			}
			if ce.File != "cc/demo/"+c.file || ce.Line != c.line || ce.Column != c.col || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("got %s:%d:%d %q, want line %d col %d containing %q", ce.File, ce.Line, ce.Column, ce.Msg, c.line, c.col, c.msg)
			}
		})
	}
}

func TestCall(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "hooks.star")
	type check func(t *testing.T, v any, err error)
	value := func(want any) check {
		return func(t *testing.T, v any, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, want) {
				t.Fatalf("got %#v\nwant %#v", v, want)
			}
		}
	}
	runtimeErr := func(msg string, stack ...string) check {
		return func(t *testing.T, v any, err error) {
			var re *scripting.RuntimeError
			if !errors.As(err, &re) || !strings.Contains(re.Msg, msg) {
				t.Fatalf("got %v, want RuntimeError containing %q", err, msg)
			}
			var got []string
			for _, f := range re.Stack {
				got = append(got, fmt.Sprintf("%s:%d", f.Function, f.Line))
			}
			if len(stack) > 0 && !reflect.DeepEqual(got, stack) {
				t.Fatalf("stack %v, want %v", got, stack)
			}
		}
	}
	outputErr := func(path, msg string) check {
		return func(t *testing.T, v any, err error) {
			var oe *scripting.OutputError
			if !errors.As(err, &oe) || oe.Path != path || !strings.Contains(oe.Msg, msg) {
				t.Fatalf("got %v, want OutputError at %q containing %q", err, path, msg)
			}
		}
	}
	cases := []struct {
		function string
		budget   scripting.Budget
		check    check
	}{
		{"sync", scripting.Budget{}, value(map[string]any{
			"name": "demo", "labels": map[string]any{"app": "demo"}, "replicas": int64(3), "ratio": 0.5,
			"tags": []any{"a", "b"}, "empty": nil, "ok": true, "tuple": []any{int64(1), "two"}})},
		{"bump_counter", scripting.Budget{}, runtimeErr("frozen list", "bump_counter:20")},
		{"read_counter", scripting.Budget{}, value(int64(1))},
		{"mutate_module_dict", scripting.Budget{}, runtimeErr("frozen hash table", "mutate_module_dict:27")},
		{"mutate_request", scripting.Budget{}, value(map[string]any{
			"labels": map[string]any{"app": "demo", "added": "yes"}, "tags": []any{"a", "b", "extra"},
			"replicas": int64(4), "keys": []any{"new", "parent"}})},
		{"compare_views", scripting.Budget{}, value(map[string]any{
			"dict_left": true, "view_left": true, "nested": true, "in_list": true, "key_in": true, "index": int64(0),
			"copy_equal": true, "union": map[string]any{"app": "demo", "extra": "1"}})},
		{"runtime_fail", scripting.Budget{}, runtimeErr("bad value: 42", "helper_fail:57", "runtime_fail:60")},
		{"runtime_type_error", scripting.Budget{}, runtimeErr("unknown binary op: string + int", "runtime_type_error:63")},
		{"missing", scripting.Budget{}, runtimeErr(`function "missing" is not defined in hooks.star`)},
		{"NOT_A_FUNCTION", scripting.Budget{}, runtimeErr(`is a int, not a function`)},
		{"returns_function", scripting.Budget{}, outputErr("children[0].metadata.name", "got function")},
		{"returns_nan", scripting.Budget{}, outputErr("status.ratio", "nan has no JSON form")},
		{"returns_inf", scripting.Budget{}, outputErr("spec[1]", "+inf has no JSON form")},
		{"returns_huge_int", scripting.Budget{}, outputErr("children[2].spec.replicas", "does not fit in 64 bits")},
		{"returns_int_key", scripting.Budget{}, outputErr("labels", "dict key 1 is a int")},
		{"returns_cycle", scripting.Budget{}, outputErr(strings.Repeat("self.", scripting.MaxOutputDepth-1)+"self", "cyclic")},
		{"returns_million_children", scripting.Budget{}, func(t *testing.T, v any, err error) {
			var be *scripting.BudgetError
			if !errors.As(err, &be) || be.Budget != scripting.BudgetOutput || be.Unit != "objects" || be.Used != be.Limit+1 {
				t.Fatalf("got %v, want maxOutput budget error", err)
			}
		}},
		{"returns_request_parent", scripting.Budget{}, value(map[string]any{"copy": testRequest()["parent"]})},
	}
	for _, c := range cases {
		t.Run(c.function, func(t *testing.T) {
			req := testRequest()
			v, err := p.Call(context.Background(), scripting.Invocation{Function: c.function, Request: req, Budget: c.budget})
			c.check(t, v, err)
			if !reflect.DeepEqual(req, testRequest()) {
				t.Fatalf("request was modified: %#v", req)
			}
		})
	}
	if got, want := p.Functions(), []string{"bump_counter", "compare_views", "helper_fail", "mutate_module_dict", "mutate_request",
		"not_a_function_value", "read_counter", "returns_cycle", "returns_function", "returns_huge_int", "returns_inf",
		"returns_int_key", "returns_million_children", "returns_nan", "returns_request_parent", "runtime_fail",
		"runtime_type_error", "sync"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Functions() = %v", got)
	}
}

func TestResultDoesNotAliasRequest(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "hooks.star")
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

func TestHostile(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "hostile.star")
	// The timeout is a backstop: every case of small is stopped by another budget first, even
	// under -race on a busy machine (5M steps took over 2 s there).
	small := scripting.Budget{Timeout: 30 * time.Second, MaxSteps: 5_000_000, MaxStackDepth: 100, MaxMemory: 32 << 20}
	cases := []struct {
		function string
		budget   scripting.Budget
		want     string // budget name, or the text of a RuntimeError after "error: "
		// line of the innermost frame, 0 when the hook was cancelled between steps: then
		// go.starlark.net reports the function, not the line.
		line int
	}{
		{"infinite_loop", small, scripting.BudgetSteps, 0},
		{"sleepy_loop", scripting.Budget{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 40}, scripting.BudgetTimeout, 0},
		{"deep_recursion", small, scripting.BudgetStackDepth, 0},
		{"string_bomb", small, scripting.BudgetMemory, 19},
		{"string_bomb_var", small, scripting.BudgetMemory, 24},
		{"list_bomb", small, scripting.BudgetMemory, 28},
		{"range_bomb", small, scripting.BudgetSteps, 31},
		{"range_materialise", small, scripting.BudgetMemory, 34},
		{"join_bomb", small, scripting.BudgetMemory, 39},
		{"replace_bomb", small, scripting.BudgetMemory, 43},
		{"format_bomb", small, scripting.BudgetMemory, 47},
		{"percent_bomb", small, scripting.BudgetMemory, 51},
		{"str_of_aliases", small, scripting.BudgetMemory, 55},
		{"extend_bomb", small, scripting.BudgetMemory, 59},
		{"plus_equal_bomb", small, scripting.BudgetMemory, 64},
		{"growth_loop", small, scripting.BudgetMemory, 0},
		{"augmented_growth_loop", small, scripting.BudgetMemory, 0},
		{"list_growth_loop", scripting.Budget{Timeout: 10 * time.Second, MaxSteps: 1 << 40, MaxMemory: 32 << 20}, scripting.BudgetMemory, 0},
		{"split_bomb", small, scripting.BudgetMemory, 88},
		{"splitlines_bomb", small, scripting.BudgetMemory, 92},
		{"rsplit_bomb", small, scripting.BudgetMemory, 96},
		{"split_whitespace_bomb", small, scripting.BudgetMemory, 100},
		{"deep_list_str", small, "error: str: value nests more than 1000 levels deep", 110},
		{"deep_tuple_repr", small, "error: repr: value nests more than 1000 levels deep", 116},
		{"deep_dict_format", small, "error: format: value nests more than 1000 levels deep", 122},
		{"int_parse_bomb", small, "error: int: text of 1048576 characters is longer than the limit", 126},
		{"int_product_bomb", small, "error: int product of about 103874 bits is larger than the limit of 65536 bits", 131},
		{"codepoints_bomb", small, scripting.BudgetMemory, 137},
		{"codepoints_extend_bomb", small, scripting.BudgetMemory, 142},
		{"bytes_elems_bomb", small, scripting.BudgetMemory, 148},
		{"codepoints_join_bomb", small, scripting.BudgetMemory, 153},
		{"compare_shared_bomb", small, scripting.BudgetSteps, 169},
		{"membership_shared_bomb", small, scripting.BudgetSteps, 172},
		{"sorted_shared_bomb", small, scripting.BudgetSteps, 175},
		{"sorted_key_shared_bomb", small, scripting.BudgetSteps, 179},
		{"index_shared_bomb", small, scripting.BudgetSteps, 182},
		{"tuple_key_bomb", small, scripting.BudgetSteps, 187},
		{"tuple_key_in_bomb", small, scripting.BudgetSteps, 191},
		{"tuple_key_display_bomb", small, scripting.BudgetSteps, 194},
		{"tuple_key_get_bomb", small, scripting.BudgetSteps, 197},
		{"deep_tuple_key", small, "error: dict key nests more than 1000 levels deep", 204},
		{"key_error_quote_bomb", small, scripting.BudgetMemory, 210},
	}
	for _, c := range cases {
		t.Run(c.function, func(t *testing.T) {
			allocs := scripting.StartMemoryWatch(0, nil)
			_, err := p.Call(context.Background(), scripting.Invocation{Function: c.function, Request: testRequest(), Budget: c.budget})
			// Refused before allocating (a line is known) or cancelled by the watchdog, a
			// hook never makes the process allocate twice its budget.
			if used := allocs.Stop(); c.budget.MaxMemory > 0 && used >= 2*c.budget.MaxMemory {
				t.Errorf("the process allocated %d bytes during the call, twice the budget or more", used)
			}
			if msg, ok := strings.CutPrefix(c.want, "error: "); ok {
				var re *scripting.RuntimeError
				if !errors.As(err, &re) || !strings.Contains(re.Msg, msg) {
					t.Fatalf("got %v, want a runtime error containing %q", err, msg)
				}
				if len(re.Stack) == 0 || re.Stack[0].File != "hostile.star" || re.Stack[0].Line != c.line {
					t.Fatalf("stack %v, want innermost at hostile.star:%d", re.Stack, c.line)
				}
				return
			}
			var be *scripting.BudgetError
			if !errors.As(err, &be) || be.Budget != c.want {
				t.Fatalf("got %v, want %s budget error", err, c.want)
			}
			if be.Used < be.Limit && c.want != scripting.BudgetTimeout {
				t.Fatalf("used %d below limit %d: %v", be.Used, be.Limit, be)
			}
			t.Logf("%v", be)
			if len(be.Stack) == 0 || be.Stack[0].File != "hostile.star" || c.line != 0 && be.Stack[0].Line != c.line {
				t.Fatalf("stack %v, want innermost at hostile.star:%d", be.Stack, c.line)
			}
		})
	}
}

func TestContextCancelStopsTheHook(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "hostile.star")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := p.Call(ctx, scripting.Invocation{Function: "sleepy_loop", Request: testRequest(),
		Budget: scripting.Budget{Timeout: time.Minute, MaxSteps: 1 << 40}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestBudgetCeilingsApply(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{Ceilings: scripting.Budget{MaxSteps: 10_000}}, NewCompiler())
	p := compileFixture(t, rt, "hostile.star")
	_, err := p.Call(context.Background(), scripting.Invocation{Function: "infinite_loop", Request: testRequest(),
		Budget: scripting.Budget{MaxSteps: 1 << 40}})
	var be *scripting.BudgetError
	if !errors.As(err, &be) || be.Budget != scripting.BudgetSteps || be.Limit != 10_000 {
		t.Fatalf("got %v, want the 10000-step ceiling", err)
	}
}

// TestParallelInvocations runs well-behaved and hostile hooks side by side; each must get
// its own result or its own typed error.
func TestParallelInvocations(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	hooks := compileFixture(t, rt, "hooks.star")
	hostile := compileFixture(t, rt, "hostile.star")
	// The timeout is a backstop, far from the steps and depth that end these calls, even under
	// -race on a busy machine.
	budget := scripting.Budget{Timeout: 30 * time.Second, MaxSteps: 200_000, MaxStackDepth: 100, MaxMemory: 256 << 20}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := testRequest()
			switch i % 4 {
			case 0, 1:
				v, err := hooks.Call(context.Background(), scripting.Invocation{Function: "mutate_request", Request: req, Budget: budget})
				if err != nil || v.(map[string]any)["replicas"] != int64(4) {
					errs <- fmt.Errorf("mutate_request: %v %v", v, err)
				}
			case 2:
				_, err := hostile.Call(context.Background(), scripting.Invocation{Function: "infinite_loop", Request: req, Budget: budget})
				var be *scripting.BudgetError
				if !errors.As(err, &be) || be.Budget != scripting.BudgetSteps {
					errs <- fmt.Errorf("infinite_loop: %v", err)
				}
			case 3:
				_, err := hostile.Call(context.Background(), scripting.Invocation{Function: "deep_recursion", Request: req, Budget: budget})
				var be *scripting.BudgetError
				if !errors.As(err, &be) || be.Budget != scripting.BudgetStackDepth {
					errs <- fmt.Errorf("deep_recursion: %v", err)
				}
			}
			if !reflect.DeepEqual(req, testRequest()) {
				errs <- fmt.Errorf("request modified: %v", req)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCompiledOnceAcrossNames(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	src, _ := os.ReadFile("testdata/hooks.star")
	for _, name := range []string{"cc/a/sync", "cc/b/sync"} {
		p, err := rt.Compile(scripting.Starlark, name, string(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Call(context.Background(), scripting.Invocation{Function: "runtime_fail", Request: testRequest()})
		var re *scripting.RuntimeError
		if !errors.As(err, &re) || re.Stack[0].File != name {
			t.Fatalf("%s: got %v", name, err)
		}
	}
	if st := rt.Stats(); st.Misses != 1 || st.Hits != 1 {
		t.Fatalf("stats %+v, want one compile", st)
	}
}
