// Package javascript is the JavaScript adapter of package scripting, over github.com/dop251/goja
// (ECMAScript 5.1 plus the ES2015+ features goja implements).
//
// Source is parsed and compiled once into an immutable *goja.Program shared by every call.
// Each Call runs on a new goja.Runtime: the program's top level runs again, then the named
// function is called. Nothing a hook writes to a global, a module variable, globalThis or a
// built-in prototype survives its call, and a module-level counter reads the same on every
// call. (A goja.Runtime cannot be reset reliably: built-in prototypes, the global object and
// the global lexical scope all hold hook-written state. A new Runtime costs a few
// microseconds because goja builds its built-ins lazily, so none are pooled; see Call.)
//
// Compile also runs the top level once, under Compiler.InitBudget, so that a top level that
// throws or does not terminate is reported as a compile error at its position.
//
// Sandbox: goja itself offers no file, network, process or timer access; this adapter adds
// only the stdlib modules, each as a global and through require(name); console.log and
// friends write to the invocation's log. Source maps are disabled so that a
// sourceMappingURL comment cannot make the parser read a file. Binary buffers (ArrayBuffer,
// typed arrays, DataView) are removed: they allocate their full size at once, and hooks have
// no use for them. Date reads the invocation's clock.
package javascript

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"metascript.dev/metascript/scripting"
)

// adapterVersion changes whenever what a source compiles to changes (parser options, the
// globals a hook sees), so that cached programs are recompiled.
const adapterVersion = "1"

// Compiler compiles JavaScript source. The zero value is ready to use and safe for
// concurrent use.
type Compiler struct {
	// InitBudget limits the run of a source's top level at compile time; zero fields take
	// scripting.DefaultBudget.
	InitBudget scripting.Budget
}

// NewCompiler returns the JavaScript Compiler.
func NewCompiler() *Compiler { return &Compiler{} }

func (*Compiler) Language() scripting.Language { return scripting.JavaScript }

var version = sync.OnceValue(func() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/dop251/goja" {
				v = m.Version
			}
		}
	}
	return "github.com/dop251/goja@" + v + "+adapter." + adapterVersion
})

// Version identifies goja's version and this adapter's sandbox.
func (*Compiler) Version() string { return version() }

// Compile parses and compiles source in sloppy mode (a hook may opt into strict mode with
// "use strict"), then runs its top level once. Syntax errors and failures of the top level
// are returned as *scripting.CompileError at their position.
func (c *Compiler) Compile(name, source string) (scripting.Program, error) {
	f, err := parser.ParseFile(nil, name, source, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, parseError(name, err)
	}
	prog, err := goja.CompileAST(f, false)
	if err != nil {
		return nil, compileError(name, err)
	}
	p := &program{name: name, prog: prog, functions: topLevelFunctions(f)}

	b := c.InitBudget.WithDefaults(scripting.DefaultBudget)
	cs := newCallState(p, b, scripting.Invocation{})
	err = cs.runTopLevel()
	cs.finish()
	if err != nil {
		return nil, initError(name, err)
	}
	return p, nil
}

func parseError(name string, err error) error {
	ce := &scripting.CompileError{Language: scripting.JavaScript, File: name, Msg: err.Error()}
	var el parser.ErrorList
	var pe *parser.Error
	if errors.As(err, &el) && len(el) > 0 {
		pe = el[0]
		ce.Msg = pe.Message
		if len(el) > 1 {
			ce.Msg += fmt.Sprintf(" (and %d more errors)", len(el)-1)
		}
	} else if errors.As(err, &pe) {
		ce.Msg = pe.Message
	}
	if pe != nil {
		ce.Line, ce.Column = pe.Position.Line, pe.Position.Column
	}
	return ce
}

// compileError locates an error of goja's compiler (early errors such as a redeclared let).
func compileError(name string, err error) error {
	ce := &scripting.CompileError{Language: scripting.JavaScript, File: name, Msg: err.Error()}
	var se *goja.CompilerSyntaxError
	var re *goja.CompilerReferenceError
	var cerr *goja.CompilerError
	switch {
	case errors.As(err, &se):
		cerr = &se.CompilerError
	case errors.As(err, &re):
		cerr = &re.CompilerError
	}
	if cerr != nil {
		ce.Msg = cerr.Message
		if cerr.File != nil {
			pos := cerr.File.Position(cerr.Offset)
			ce.Line, ce.Column = pos.Line, pos.Column
		}
	}
	return ce
}

// initError reports a failure of the top level as a CompileError located at the innermost
// frame of the source, keeping the runtime or budget error as the message.
func initError(name string, err error) error {
	ce := &scripting.CompileError{Language: scripting.JavaScript, File: name, Msg: "top level: " + err.Error()}
	var stack []scripting.Frame
	var re *scripting.RuntimeError
	var be *scripting.BudgetError
	if errors.As(err, &re) {
		ce.Msg, stack = "top level: "+re.Msg, re.Stack
	} else if errors.As(err, &be) {
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

// topLevelFunctions lists the functions a source declares at its top level: function
// declarations and variables (var, let, const) initialised with a function or arrow
// expression. Sorted, without duplicates.
func topLevelFunctions(f *ast.Program) []string {
	var names []string
	bindings := func(list []*ast.Binding) {
		for _, b := range list {
			id, ok := b.Target.(*ast.Identifier)
			if !ok {
				continue
			}
			switch b.Initializer.(type) {
			case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
				names = append(names, string(id.Name))
			}
		}
	}
	for _, st := range f.Body {
		switch st := st.(type) {
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				names = append(names, string(st.Function.Name.Name))
			}
		case *ast.VariableStatement:
			bindings(st.List)
		case *ast.LexicalDeclaration:
			bindings(st.List)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
