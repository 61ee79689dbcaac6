// Package starlark is the Starlark adapter of package scripting, over go.starlark.net.
//
// Source is parsed with while loops, top-level control flow, global reassignment (before
// freezing) and recursion enabled, rewritten so that amplifying operations are checked
// before they allocate (see rewrite.go and guard.go) and small dict displays make records
// (record.go), then executed once: its top level runs at compile time under
// Compiler.InitBudget and its globals are frozen. Every Call runs the named function on a
// new Thread over those frozen globals.
//
// Module state: a top-level value is frozen after the top level ran, so a hook cannot
// change it; mutating a module-level list or dict fails with a runtime error and a module
// counter reads the same on every call. Anything computed at top level (including a
// time.now() there) is computed once, at compile time.
//
// Sandbox: there is no file, network, environment or process access in Starlark itself;
// load() reaches only stdlib modules (load("json", "json")), each also predeclared as a
// global; print() goes to the invocation's log.
package starlark

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"metascript.dev/metascript/scripting"
)

// adapterVersion changes whenever what a source compiles to changes (rewrite rules,
// predeclared names), so that cached programs are recompiled.
const adapterVersion = "8"

var fileOptions = syntax.FileOptions{
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true, // bounded by the stack depth budget instead
}

// Compiler compiles Starlark source. The zero value is ready to use and safe for concurrent
// use.
type Compiler struct {
	// InitBudget limits the execution of a source's top level at compile time; zero fields
	// take scripting.DefaultBudget.
	InitBudget scripting.Budget
}

// NewCompiler returns the Starlark Compiler.
func NewCompiler() *Compiler { return &Compiler{} }

func (*Compiler) Language() scripting.Language { return scripting.Starlark }

var version = sync.OnceValue(func() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "go.starlark.net" {
				v = m.Version
			}
		}
	}
	return "go.starlark.net@" + v + "+adapter." + adapterVersion
})

// Version identifies go.starlark.net's version and this adapter's rewrite rules.
func (*Compiler) Version() string { return version() }

// MaxSourceBytes bounds the length of a source (a ConfigMap holds at most 1 MiB). Compiling
// is not budgeted: parsing, rewriting and compiling cost time and memory linear in the source
// (go.starlark.net limits bracket nesting itself), about 150 bytes allocated per source byte
// at worst, which this bounds.
const MaxSourceBytes = 1 << 20

// Compile parses, rewrites, resolves and initialises source. Syntax and resolution errors
// and failures of the top level (fail(), a disallowed load, an exhausted budget) are returned
// as *scripting.CompileError at their position; a source longer than MaxSourceBytes is one
// too.
func (c *Compiler) Compile(name, source string) (scripting.Program, error) {
	return c.compile(name, source, nil, "")
}

// CompileLinked is Compile with load("lib:LIBRARY/MODULE.star", ...) resolved through l:
// the loaded names are bound to the library module's frozen values.
func (c *Compiler) CompileLinked(name, source string, l scripting.Linker) (scripting.Program, error) {
	return c.compile(name, source, l, "")
}

// CompileModule compiles a library module: its top level runs once, now, under InitBudget,
// and its frozen globals (a starlark.StringDict) are what every hook that loads it binds.
// Functions among them run on the calling hook's Thread, under the hook's budget.
func (c *Compiler) CompileModule(name, source string, l scripting.Linker) (any, error) {
	ref, _, err := scripting.ParseLibraryRef(name)
	if err != nil {
		return nil, err
	}
	p, err := c.compile(name, source, l, ref.Library)
	if err != nil {
		return nil, err
	}
	return p.(*program).globals, nil
}

var _ scripting.LinkingCompiler = (*Compiler)(nil)

// compile compiles source; from is the library a module belongs to, "" for a hook.
func (c *Compiler) compile(name, source string, l scripting.Linker, from string) (scripting.Program, error) {
	if len(source) > MaxSourceBytes {
		return nil, &scripting.CompileError{Language: scripting.Starlark, File: name, Line: 1, Column: 1,
			Msg: fmt.Sprintf("source is %d bytes, more than the limit of %d", len(source), MaxSourceBytes)}
	}
	opts := fileOptions
	f, err := opts.Parse(name, source, 0)
	if err != nil {
		return nil, compileError(name, source, err)
	}
	if err := rewrite(f); err != nil {
		return nil, compileError(name, source, err)
	}
	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, compileError(name, source, err)
	}

	cs := &callState{}
	thread := cs.start(context.Background(), name, c.InitBudget.WithDefaults(scripting.DefaultBudget))
	thread.Load = loader(l, from)
	globals, err := prog.Init(thread, predeclared())
	cs.watch.End()
	if err != nil {
		return nil, initError(name, cs, err)
	}
	globals.Freeze()

	p := &program{name: name, globals: globals}
	for n, v := range globals {
		if _, ok := v.(*starlark.Function); ok {
			p.functions = append(p.functions, n)
		}
	}
	slices.Sort(p.functions)
	return p, nil
}

// compileError locates a syntax, resolution or rewrite error of source; a syntax error that
// names the token the parser stopped at is located at that token (tokenStart).
func compileError(name, source string, err error) error {
	ce := &scripting.CompileError{Language: scripting.Starlark, File: name, Msg: err.Error()}
	var se syntax.Error
	var rl resolve.ErrorList
	var re *rewriteError
	switch {
	case errors.As(err, &se):
		ce.Msg = se.Msg
		ce.Line, ce.Column = tokenStart(source, int(se.Pos.Line), int(se.Pos.Col), se.Msg)
	case errors.As(err, &rl):
		ce.Line, ce.Column, ce.Msg = int(rl[0].Pos.Line), int(rl[0].Pos.Col), rl[0].Msg
		if len(rl) > 1 {
			ce.Msg += fmt.Sprintf(" (and %d more errors)", len(rl)-1)
		}
	case errors.As(err, &re):
		ce.Line, ce.Column, ce.Msg = int(re.pos.Line), int(re.pos.Col), re.msg
	}
	return ce
}

// initError reports a failure of the top level as a CompileError located at the innermost
// frame of the source, keeping the budget or runtime error as the message.
func initError(name string, cs *callState, err error) error {
	mapped := cs.mapError(err)
	ce := &scripting.CompileError{Language: scripting.Starlark, File: name, Msg: "top level: " + mapped.Error()}
	var stack []scripting.Frame
	var re *scripting.RuntimeError
	var be *scripting.BudgetError
	if errors.As(mapped, &re) {
		ce.Msg, stack = "top level: "+re.Msg, re.Stack
	} else if errors.As(mapped, &be) {
		stack = be.Stack
	}
	for _, f := range stack {
		if f.File == name {
			ce.Line, ce.Column = f.Line, f.Column
			break
		}
	}
	return ce
}
