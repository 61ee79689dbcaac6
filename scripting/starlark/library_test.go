package starlark

import (
	"context"
	"errors"
	"strings"
	"testing"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/hooktest"
)

const hookUsingText = `load("lib:text/names.star", "child_name", "SUFFIX")
load("json", "json")

def sync(request):
    return {"name": child_name(request["parent"]), "suffix": SUFFIX}
`

func TestLibraryLoad(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	libs := hooktest.Libraries(t, "libraries")
	p, err := rt.CompileLinked(scripting.Starlark, "cc/a/hooks/sync", hookUsingText, libs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Call(context.Background(), scripting.Invocation{Function: "sync", Request: hooktest.Request()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "DEMO-child", "suffix": "-child"}
	if g := got.(map[string]any); g["name"] != want["name"] || g["suffix"] != want["suffix"] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestLibraryLoadErrors(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	text, _ := libs.Library("text")
	cases := []struct {
		name, load, want string
	}{
		{"cycle", `load("lib:cycle/a.star", "a")`, "load cycle: lib:cycle/a.star -> lib:cycle/b.star -> lib:cycle/a.star"},
		{"missing module", `load("lib:text/nope.star", "x")`, `library text has no module "nope" (modules: case, names)`},
		{"missing library", `load("lib:absent/x.star", "x")`, "library absent not found: no HookLibrary of that name"},
		{"no .star", `load("lib:text/case", "upper")`, "a Starlark module is loaded as lib:LIBRARY/MODULE.star"},
		{"other library", `load("lib:other/cross.star", "upper")`, "a module of library other may load only modules of other"},
		{"stale pin", `load("lib:text@0123456789ab/case.star", "upper")`, "pinned revision 0123456789ab is not the library's current revision " + text.Revision},
		{"broken module", `load("lib:spin/broken.star", "broken")`, "lib:spin/broken.star:1:"},
		{"unknown symbol", `load("lib:text/case.star", "lower")`, "lower"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
			_, err := rt.CompileLinked(scripting.Starlark, "cc/a/hooks/sync", c.load+"\ndef sync(r):\n    return {}\n", libs)
			var ce *scripting.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *CompileError", err)
			}
			if ce.File != "cc/a/hooks/sync" || ce.Line != 1 || !strings.Contains(ce.Msg, c.want) {
				t.Fatalf("got %s:%d:%d: %s, want cc/a/hooks/sync:1: ...%s...", ce.File, ce.Line, ce.Column, ce.Msg, c.want)
			}
		})
	}
}

func TestLibraryPinCurrent(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	text, _ := libs.Library("text")
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	src := `load("lib:text@` + text.Revision + `/case.star", "upper")` + "\ndef sync(r):\n    return {\"x\": upper(\"a\")}\n"
	if _, err := rt.CompileLinked(scripting.Starlark, "h", src, libs); err != nil {
		t.Fatal(err)
	}
}

// TestLibraryCompiledOnce: hooks of different sources loading one library share its
// compiled modules; an edit of the library compiles its modules, and the hooks, again.
func TestLibraryCompiledOnce(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	for i, src := range []string{hookUsingText, hookUsingText + "\n# another controller\n", hookUsingText + "\n# a third\n"} {
		if _, err := rt.CompileLinked(scripting.Starlark, "h", src, libs); err != nil {
			t.Fatal(i, err)
		}
	}
	if got := rt.ModulesCompiled(); got != 2 { // names.star and case.star
		t.Fatalf("modules compiled %d times, want 2", got)
	}
	misses := rt.Stats().Misses
	if _, err := rt.CompileLinked(scripting.Starlark, "h", hookUsingText, libs); err != nil {
		t.Fatal(err)
	}
	if rt.Stats().Misses != misses || rt.ModulesCompiled() != 2 {
		t.Fatalf("an unchanged hook and library compiled again")
	}

	text, _ := libs.Library("text")
	mods := map[string]scripting.LibraryModule{}
	for n, m := range text.Modules {
		mods[n] = m
	}
	mods["names"] = scripting.LibraryModule{Language: scripting.Starlark,
		Source: strings.Replace(mods["names"].Source, `"-child"`, `"-kid"`, 1)}
	edited := &scripting.LibrarySet{ScopeName: "HookLibrary", ByName: map[string]*scripting.Library{"text": scripting.NewLibrary("text", mods)}}
	p, err := rt.CompileLinked(scripting.Starlark, "h", hookUsingText, edited)
	if err != nil {
		t.Fatal(err)
	}
	if rt.ModulesCompiled() != 4 {
		t.Fatalf("after the edit modules compiled %d times, want 4", rt.ModulesCompiled())
	}
	got, err := p.Call(context.Background(), scripting.Invocation{Function: "sync", Request: hooktest.Request()})
	if err != nil {
		t.Fatal(err)
	}
	if got.(map[string]any)["name"] != "DEMO-kid" {
		t.Fatalf("the hook runs the old library: %v", got)
	}
}

// TestLibraryRunsUnderHookBudget: a library function runs on the calling hook's Thread, so
// the hook's step budget stops it.
func TestLibraryRunsUnderHookBudget(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p, err := rt.CompileLinked(scripting.Starlark, "h", "load(\"lib:spin/loop.star\", \"spin\")\ndef sync(r):\n    spin()\n", libs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), scripting.Invocation{Function: "sync", Request: hooktest.Request(),
		Budget: scripting.Budget{MaxSteps: 10_000}})
	var be *scripting.BudgetError
	if !errors.As(err, &be) || be.Budget != scripting.BudgetSteps {
		t.Fatalf("got %v, want the steps budget exceeded", err)
	}
	if len(be.Stack) == 0 || be.Stack[0].File != "lib:spin/loop.star" {
		t.Fatalf("stack %v, want the library frame innermost", be.Stack)
	}
}

func TestCompileLibraryReportsBrokenModules(t *testing.T) {
	libs := hooktest.Libraries(t, "libraries")
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	spin, _ := libs.Library("spin")
	err := rt.CompileLibrary(spin)
	var ce *scripting.CompileError
	if !errors.As(err, &ce) || ce.File != "lib:spin/broken.star" || ce.Line != 1 {
		t.Fatalf("got %v, want a CompileError in lib:spin/broken.star:1", err)
	}
	text, _ := libs.Library("text")
	if err := rt.CompileLibrary(text); err != nil {
		t.Fatal(err)
	}
}

func TestLibraryNotOfferedByPlainCompile(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	_, err := rt.Compile(scripting.Starlark, "h", hookUsingText)
	if err == nil || !strings.Contains(err.Error(), "no libraries are offered") {
		t.Fatalf("got %v", err)
	}
}

// hinted is a library set that says how to supply a missing library.
type hinted struct{ *scripting.LibrarySet }

func (hinted) MissingHint(name string) string { return "give " + name + " somehow" }

func TestLibraryMissingHint(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	libs := hinted{hooktest.Libraries(t, "libraries")}
	_, err := rt.CompileLinked(scripting.Starlark, "h", `load("lib:absent/x.star", "x")`+"\ndef sync(r):\n    return {}\n", libs)
	want := "library absent not found: no HookLibrary of that name (give absent somehow)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want ...%s", err, want)
	}
}
