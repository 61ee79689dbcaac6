package javascript

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/hooktest"
)

const hookUsingText = `const names = require("lib:text/names");
function sync(request) {
  return {name: names.childName(request.parent), suffix: names.SUFFIX, loads: names.loads(),
    same: require("lib:text/names") === names};
}
`

func newLibraryRuntime() *scripting.Runtime {
	return scripting.NewRuntime(scripting.Options{}, NewCompiler())
}

func TestLibraryRequire(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	p, err := newLibraryRuntime().CompileLinked(scripting.JavaScript, "cc/a/hooks/sync", hookUsingText, libs)
	if err != nil {
		t.Fatal(err)
	}
	// Twice: a module's body runs once per call, and nothing it made survives the call.
	for range 2 {
		got, err := p.Call(context.Background(), scripting.Invocation{Function: "sync", Request: hooktest.Request()})
		if err != nil {
			t.Fatal(err)
		}
		g := got.(map[string]any)
		if g["name"] != "DEMO-child" || g["suffix"] != "-child" || g["loads"] != int64(1) || g["same"] != true {
			t.Fatalf("got %v", g)
		}
	}
}

func TestLibraryRequireErrors(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	text, _ := libs.Library("text")
	cases := []struct {
		name, require, want string
	}{
		{"cycle", `require("lib:cycle/a")`, "load cycle: lib:cycle/a -> lib:cycle/b -> lib:cycle/a"},
		{"missing module", `require("lib:text/nope")`, `library text has no module "nope" (modules: case, names)`},
		{"missing library", `require("lib:absent/x")`, "library absent not found: no HookLibrary of that name"},
		{"stale pin", `require("lib:text@0123456789ab/case")`, "is not the library's current revision " + text.Revision},
		{"broken module", `require("lib:spin/broken")`, "lib:spin/broken:2:1: javascript compile error: Unexpected end of input"},
		{"bad reference", `require("lib:Text")`, "is not a library reference"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "function sync(r) {\n  return " + c.require + ";\n}\n"
			_, err := newLibraryRuntime().CompileLinked(scripting.JavaScript, "cc/a/hooks/sync", src, libs)
			var ce *scripting.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *CompileError", err)
			}
			if ce.File != "cc/a/hooks/sync" || ce.Line != 2 || ce.Column != 18 || !strings.Contains(ce.Msg, c.want) {
				t.Fatalf("got %s:%d:%d: %s, want cc/a/hooks/sync:2:18: ...%s...", ce.File, ce.Line, ce.Column, ce.Msg, c.want)
			}
		})
	}
}

func TestLibraryRequireComputedName(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	p, err := newLibraryRuntime().CompileLinked(scripting.JavaScript, "h",
		`function sync(r) { const n = "names"; return require("lib:text/" + n); }`, libs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), scripting.Invocation{Function: "sync", Request: hooktest.Request()})
	if err == nil || !strings.Contains(err.Error(), "was not linked when the hook was compiled") {
		t.Fatalf("got %v", err)
	}
}

func TestLibraryCompiledOnce(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	rt := newLibraryRuntime()
	for i, src := range []string{hookUsingText, hookUsingText + "// b\n", hookUsingText + "// c\n"} {
		if _, err := rt.CompileLinked(scripting.JavaScript, "h", src, libs); err != nil {
			t.Fatal(i, err)
		}
	}
	if got := rt.ModulesCompiled(); got != 2 {
		t.Fatalf("modules compiled %d times, want 2", got)
	}
}

// TestLibraryRunsUnderHookBudget: a module's code runs in the calling Runtime, under the
// calling hook's timeout.
func TestLibraryRunsUnderHookBudget(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	p, err := newLibraryRuntime().CompileLinked(scripting.JavaScript, "h",
		`const l = require("lib:spin/loop"); function sync(r) { l.spin(); }`, libs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), scripting.Invocation{Function: "sync", Request: hooktest.Request(),
		Budget: scripting.Budget{Timeout: 50 * time.Millisecond}})
	var be *scripting.BudgetError
	if !errors.As(err, &be) || be.Budget != scripting.BudgetTimeout {
		t.Fatalf("got %v, want the timeout exceeded", err)
	}
	if len(be.Stack) == 0 || be.Stack[0].File != "lib:spin/loop" || be.Stack[0].Line != 1 {
		t.Fatalf("stack %v, want lib:spin/loop:1 innermost", be.Stack)
	}
}
