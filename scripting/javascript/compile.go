// Package javascript is the JavaScript adapter of package scripting, built on
// github.com/dop251/goja (ECMAScript 5.1 plus the ES2015+ features goja implements).
//
// Compile parses and compiles hook source once into an immutable *goja.Program that every
// call shares. Each Call runs on a fresh goja Runtime (see call.go for why a fresh runtime
// rather than a reset pooled one), sees the request through lazy copy-on-write views
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
	"sort"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"

	"metascript.dev/metascript/scripting"
)

// Compiler is the JavaScript scripting.Compiler. The zero value is ready to use and safe for
// concurrent use.
type Compiler struct{}

var _ scripting.Compiler = Compiler{}

// Language returns scripting.JavaScript.
func (Compiler) Language() scripting.Language { return scripting.JavaScript }

// Version names the goja revision and this adapter's semantics; a change recompiles cached
// programs.
func (Compiler) Version() string { return "goja-20260917113740-793a2a65c13b/adapter-1" }

// Compile parses and compiles source as a sloppy-mode script named name. Syntax errors and
// sources that exceed the complexity limits of checkSourceShape are returned as
// *scripting.CompileError with a 1-based line and column.
func (Compiler) Compile(name, source string) (scripting.Program, error) {
	if err := checkSourceShape(source); err != nil {
		err.File = name
		return nil, err
	}
	// Source maps are disabled: the parser would otherwise read the file a
	// sourceMappingURL comment names from the local file system.
	astProg, err := parser.ParseFile(nil, name, source, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, parseError(name, err)
	}
	prg, err := goja.CompileAST(astProg, false)
	if err != nil {
		return nil, compileError(name, astProg.File, err)
	}
	p := &Program{name: name, prg: prg, lexical: map[string]*goja.Program{}}
	if err := p.collectTopLevel(astProg); err != nil {
		return nil, err
	}
	return p, nil
}

// Program is a compiled hook. It is immutable and safe for concurrent use.
type Program struct {
	name string
	prg  *goja.Program
	// functions lists top-level function declarations and top-level bindings initialised
	// with a function, arrow function or class expression, sorted.
	functions []string
	// lexical holds, for each top-level let/const/class name, a program that evaluates the
	// name: such bindings live in the global lexical environment, not on the global object.
	lexical map[string]*goja.Program
}

var _ scripting.Program = (*Program)(nil)

// Language returns scripting.JavaScript.
func (*Program) Language() scripting.Language { return scripting.JavaScript }

// Functions lists the top-level functions the source defines, sorted. The slice is shared
// and must not be modified.
func (p *Program) Functions() []string { return p.functions }

func (p *Program) collectTopLevel(prog *ast.Program) error {
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			p.functions = append(p.functions, name)
		}
	}
	addLexical := func(name string) error {
		getter, err := goja.Compile(p.name, name, false)
		if err != nil {
			return fmt.Errorf("javascript: compiling accessor for %q: %w", name, err)
		}
		p.lexical[name] = getter
		return nil
	}
	for _, st := range prog.Body {
		switch st := st.(type) {
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				add(st.Function.Name.Name.String())
			}
		case *ast.ClassDeclaration:
			if st.Class.Name != nil {
				if err := addLexical(st.Class.Name.Name.String()); err != nil {
					return err
				}
			}
		case *ast.VariableStatement:
			for _, b := range st.List {
				if id, ok := b.Target.(*ast.Identifier); ok && isFunctionExpr(b.Initializer) {
					add(id.Name.String())
				}
			}
		case *ast.LexicalDeclaration:
			for _, b := range st.List {
				id, ok := b.Target.(*ast.Identifier)
				if !ok {
					continue
				}
				if err := addLexical(id.Name.String()); err != nil {
					return err
				}
				if isFunctionExpr(b.Initializer) {
					add(id.Name.String())
				}
			}
		}
	}
	sort.Strings(p.functions)
	return nil
}

func isFunctionExpr(e ast.Expression) bool {
	switch e.(type) {
	case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
		return true
	}
	return false
}

func parseError(name string, err error) *scripting.CompileError {
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
		ce.Line, ce.Column, ce.Msg = first.Position.Line, first.Position.Column, first.Message
	}
	return ce
}

func compileError(name string, f *file.File, err error) *scripting.CompileError {
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
			ce.Line, ce.Column = pos.Line, pos.Column
		}
	}
	return ce
}
