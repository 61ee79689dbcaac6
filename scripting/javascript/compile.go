// Package javascript is the JavaScript adapter of package scripting, built on
// github.com/dop251/goja (ECMAScript 5.1 plus the ES2015+ features goja implements).
//
// Compile parses and compiles hook source once into an immutable *goja.Program that every
// call shares. Each Call runs on a pooled goja Runtime whose built-ins are frozen (see
// call.go for why that isolates calls), sees the request through lazy copy-on-write views
// (request.go), and has its result converted directly to the JSON shape (response.go).
//
// Sandbox: the only globals beyond the ECMAScript built-ins are the stdlib modules and
// require, which returns stdlib modules only. There is no console, no timers, no file system,
// network, environment or process access; eval, Function and the other constructors that
// compile strings are removed, and typed arrays and ArrayBuffer (which allocate in one step)
// are not offered. See sandbox.go and the budgets in budget.go.
package javascript

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"

	"metascript.dev/metascript/scripting"
)

// Compiler is the JavaScript scripting.Compiler. The zero value is ready to use, offers every
// stdlib module, and is safe for concurrent use.
type Compiler struct {
	modules *moduleSet // nil: stdlib.All()
}

// NewCompiler returns a Compiler offering every stdlib module.
func NewCompiler() Compiler { return Compiler{} }

var _ scripting.Compiler = Compiler{}

// Language returns scripting.JavaScript.
func (Compiler) Language() scripting.Language { return scripting.JavaScript }

// Version names the goja revision and this adapter's semantics; a change recompiles cached
// programs.
func (Compiler) Version() string { return "goja-20260917113740-793a2a65c13b/adapter-3" }

// Compile parses and compiles source once. Syntax errors and sources that exceed the
// complexity limits of checkSourceShape are returned as *scripting.CompileError with a
// 1-based line and column.
//
// The source is compiled as the body of a function (wrapperPrefix ... wrapperSuffix) rather
// than as a script: each call evaluates that function afresh, so top-level declarations are
// new in every call, live in a closure rather than on the global object, and a top-level
// let or const never collides with the previous call's. The prefix shares the first line
// with the source, so lines are unchanged and only columns of line 1 are shifted back.
func (c Compiler) Compile(name, source string) (scripting.Program, error) {
	return c.compile(name, source, nil)
}

// compile is Compile with library requires resolved through l (nil: none offered).
func (c Compiler) compile(name, source string, l scripting.Linker) (scripting.Program, error) {
	// The source must be a valid script on its own: parse it unwrapped first, for errors
	// located in the source as written and for its top-level declarations.
	astProg, err := parseSource(name, source)
	if err != nil {
		return nil, err
	}
	// Rewritten here too: goja folds operations on literals as it compiles, and a BigInt
	// power of literals can ask for gigabytes (guard_bigint.go).
	rewriteAdds(astProg)
	if _, err := goja.CompileAST(astProg, false); err != nil {
		return nil, compileError(name, source, astProg.File, err)
	}
	mods := c.modules
	if mods == nil {
		mods = defaultModules()
	}
	p := &Program{name: name, modules: mods}
	if p.libs, err = link(name, astProg, l, ""); err != nil {
		return nil, err
	}
	bindings := p.collectTopLevel(astProg)

	if p.prg, err = compileWrapped(name, wrapperPrefix+source+wrapperSuffix(bindings), shiftFirstLine); err != nil {
		return nil, err
	}
	return p, nil
}

// compileWrapped parses and compiles wrapped, a source inside the engine's wrapper, with the
// guards' rewrites; shift moves an error's position back to the unwrapped source's lines.
func compileWrapped(name, wrapped string, shift func(*scripting.CompileError) *scripting.CompileError) (*goja.Program, error) {
	wast, err := parser.ParseFile(nil, name, wrapped, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, shift(parseError(name, wrapped, err))
	}
	rewriteAdds(wast)
	prg, err := goja.CompileAST(wast, false)
	if err != nil {
		return nil, shift(compileError(name, wrapped, wast.File, err))
	}
	return prg, nil
}

// wrapperPrefix opens the function the source is compiled into; see Compile. Its name marks
// the top level in stack traces.
const (
	wrapperName   = "$metascript$toplevel"
	wrapperPrefix = "(function " + wrapperName + "(" + addName + "," + arithName + "){"
)

// wrapperSuffix closes the function with an accessor of the top-level bindings: calling the
// function runs the top-level code and returns a function from name to binding.
func wrapperSuffix(bindings []string) string {
	var b strings.Builder
	b.WriteString("\n;return function($metascript$name){switch($metascript$name){")
	for _, n := range bindings {
		fmt.Fprintf(&b, "case %q:return %s;", n, n)
	}
	b.WriteString("}};})")
	return b.String()
}

// shiftFirstLine moves an error of the wrapped source to the source: the prefix, ASCII, shares
// its first line.
func shiftFirstLine(e *scripting.CompileError) *scripting.CompileError {
	if e.Line == 1 {
		e.Column = max(1, e.Column-len(wrapperPrefix))
	}
	return e
}

// Program is a compiled hook. It is immutable and safe for concurrent use.
type Program struct {
	name string
	// prg evaluates to the wrapper function (see Compile).
	prg *goja.Program
	// functions lists top-level function declarations and top-level bindings initialised
	// with a function or arrow function expression, sorted.
	functions []string
	modules   *moduleSet
	// libs are the library modules the hook requires, by the string it requires them with.
	libs map[string]*libModule
}

var _ scripting.Program = (*Program)(nil)

// Language returns scripting.JavaScript.
func (*Program) Language() scripting.Language { return scripting.JavaScript }

// Functions lists the top-level functions the source defines, sorted: function
// declarations and var, let or const bindings initialised with a function or arrow function.
func (p *Program) Functions() []string { return slices.Clone(p.functions) }

// collectTopLevel fills p.functions and returns every top-level binding name.
func (p *Program) collectTopLevel(prog *ast.Program) []string {
	var bindings []string
	seen := map[string]bool{}
	bind := func(name string, isFunc bool) {
		if !seen[name] {
			seen[name] = true
			bindings = append(bindings, name)
		}
		if isFunc && !slices.Contains(p.functions, name) {
			p.functions = append(p.functions, name)
		}
	}
	for _, st := range prog.Body {
		switch st := st.(type) {
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				bind(st.Function.Name.Name.String(), true)
			}
		case *ast.ClassDeclaration:
			if st.Class.Name != nil {
				bind(st.Class.Name.Name.String(), false)
			}
		case *ast.VariableStatement:
			for _, b := range st.List {
				if id, ok := b.Target.(*ast.Identifier); ok {
					bind(id.Name.String(), isFunctionExpr(b.Initializer))
				}
			}
		case *ast.LexicalDeclaration:
			for _, b := range st.List {
				if id, ok := b.Target.(*ast.Identifier); ok {
					bind(id.Name.String(), isFunctionExpr(b.Initializer))
				}
			}
		}
	}
	slices.Sort(p.functions)
	return bindings
}

func isFunctionExpr(e ast.Expression) bool {
	switch e.(type) {
	case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
		return true
	}
	return false
}

// parseError locates a parser error in src, the text parsed (sourcePosition).
// parseSource checks the shape of source (checkSourceShape) and parses it, as the file
// name, with source maps disabled: the parser would otherwise read the file a
// sourceMappingURL comment names. Its error is a *scripting.CompileError.
func parseSource(name, source string) (*ast.Program, error) {
	if err := checkSourceShape(source); err != nil {
		err.File = name
		return nil, err
	}
	astProg, err := parser.ParseFile(nil, name, source, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, parseError(name, source, err)
	}
	return astProg, nil
}

func parseError(name, src string, err error) *scripting.CompileError {
	ce := &scripting.CompileError{Language: scripting.JavaScript, File: name, Msg: err.Error()}
	var first *parser.Error
	switch e := err.(type) {
	case parser.ErrorList:
		if len(e) > 0 {
			first = e[0]
		}
	case *parser.Error:
		first = e
	}
	if first != nil {
		ce.Msg = first.Message
		ce.Line, ce.Column = sourcePosition(src, first.Position.Line, first.Position.Column, first.Message)
	}
	return ce
}

// compileError locates a compiler error in src, the text compiled (sourcePosition).
func compileError(name, src string, f *file.File, err error) *scripting.CompileError {
	ce := &scripting.CompileError{Language: scripting.JavaScript, File: name, Msg: err.Error()}
	var cerr *goja.CompilerError
	switch e := err.(type) {
	case *goja.CompilerSyntaxError:
		cerr = &e.CompilerError
	case *goja.CompilerReferenceError:
		cerr = &e.CompilerError
	}
	if cerr != nil {
		ce.Msg = cerr.Message
		pf := f
		if cerr.File != nil {
			pf = cerr.File
		}
		if pf != nil {
			pos := pf.Position(cerr.Offset)
			ce.Line, ce.Column = sourcePosition(src, pos.Line, pos.Column, cerr.Message)
		}
	}
	return ce
}
