package javascript

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"metascript.dev/metascript/scripting"
)

// TestGuardsMatchGoja runs each function of testdata/add.js and testdata/builtins.js as a
// hook, where its sums go through $metascript$add and its built-ins through their guards,
// and in a plain goja Runtime, where they do not: the results must be the same.
func TestGuardsMatchGoja(t *testing.T) {
	for _, file := range []string{"add.js", "builtins.js"} {
		src, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		plain := goja.New()
		if _, err := plain.RunString(string(src)); err != nil {
			t.Fatal(err)
		}
		exprs := plain.Get("exprs").(*goja.Object)
		hook := string(src) + "\nfunction run(request) { return JSON.stringify(exprs[request.name]()); }"
		p, err := newTestRuntime().Compile(scripting.JavaScript, file, hook)
		if err != nil {
			t.Fatal(err)
		}
		stringify, _ := goja.AssertFunction(plain.Get("JSON").(*goja.Object).Get("stringify"))
		for _, name := range exprs.Keys() {
			t.Run(file+"/"+name, func(t *testing.T) {
				fn, _ := goja.AssertFunction(exprs.Get(name))
				v, err := fn(goja.Undefined())
				if err != nil {
					t.Fatal(err)
				}
				want, err := stringify(goja.Undefined(), v)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.Call(context.Background(), scripting.Invocation{Function: "run",
					Request: map[string]any{"name": name}})
				if err != nil {
					t.Fatal(err)
				}
				if got != want.Export() {
					t.Fatalf("hook: %v\ngoja: %v", got, want.Export())
				}
			})
		}
	}
}

// TestRewriteAdds checks which sums the rewrite guards.
func TestRewriteAdds(t *testing.T) {
	cases := []struct {
		src     string
		guarded int
	}{
		{"a + b", 1},
		{`a + "x"`, 0},
		{"1 + a", 0},
		{"`t` + a", 0},
		{"`t${x}` + a", 1},
		{`a + "-" + i`, 1},
		{"a + (b + c)", 2},
		{"s += s", 1},
		{`s += "x"`, 0},
		{"this.p += s", 1},
		{"o.p += s", 1},
		{"o[k] += s", 0},
		{"f().p += s", 0},
		{"a - b", 0},
		{"(x) => x + y", 1},
		{"function f() { return [a + b, {k: c + d}]; }", 2},
		{"for (let i = a + b; i < 1; i++) {}", 1},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			prog, err := parseForTest(c.src)
			if err != nil {
				t.Fatal(err)
			}
			rewriteAdds(prog)
			if n := countAddCalls(reflect.ValueOf(prog)); n != c.guarded {
				t.Fatalf("%d sums guarded, want %d", n, c.guarded)
			}
		})
	}
}

func parseForTest(src string) (*ast.Program, error) {
	return parser.ParseFile(nil, "t.js", src, 0, parser.WithDisableSourceMaps)
}

// countAddCalls counts the $metascript$add calls below v.
func countAddCalls(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		if c, ok := v.Interface().(*ast.CallExpression); ok && v.Kind() == reflect.Pointer {
			if id, ok := c.Callee.(*ast.Identifier); ok && id.Name == addName {
				n++
			}
		}
		if v.Kind() == reflect.Interface || (v.Elem().Kind() == reflect.Struct && v.Elem().Type().PkgPath() == astPkg) {
			n += countAddCalls(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += countAddCalls(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			n += countAddCalls(v.Index(i))
		}
	}
	return n
}

// TestAddErrorStack checks that an error thrown by `+` is located in the hook alone.
func TestAddErrorStack(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "add.js")
	_, err := p.Call(context.Background(), scripting.Invocation{Function: "symbolSum"})
	var re *scripting.RuntimeError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "TypeError") {
		t.Fatalf("got %v, want a TypeError", err)
	}
	if len(re.Stack) != 1 || re.Stack[0].Function != "symbolSum" || re.Stack[0].File != "add.js" || re.Stack[0].Line != 42 {
		t.Fatalf("stack %+v, want symbolSum at add.js:42 alone", re.Stack)
	}
}

// TestMatchLoopMatchesGoja runs the global matches of testdata/builtins.js through the loop
// the guard uses for long inputs (guard_regexp.go), which only a long input or a tight budget
// reaches otherwise.
func TestMatchLoopMatchesGoja(t *testing.T) {
	defer func(from int) { matchLoopFrom = from }(matchLoopFrom)
	matchLoopFrom = 0
	TestGuardsMatchGoja(t)
}
