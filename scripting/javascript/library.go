package javascript

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"

	"metascript.dev/metascript/scripting"
)

// Library modules. A module is compiled once per library revision into a *goja.Program of a
// function (modulePrefix ... "})") and shared. A call that requires it evaluates that
// function in the calling Runtime, under the calling hook's budgets, once per call: the
// module's body runs with exports, module and require, and require returns
// module.exports (CommonJS-like). Nothing a module's body makes outlives the call.
//
// require("lib:...") is resolved at compile time: Compile finds every require of a string
// literal naming a library module and links it; a reference that cannot be resolved fails
// the compile at the literal's position, and a require of a library module that was not
// linked (a computed name) throws.

// moduleWrapperName marks a module's top level in stack traces.
const (
	moduleWrapperName = "$metascript$module"
	modulePrefix      = "(function " + moduleWrapperName + "(exports,module,require," + addName + "," + arithName + "){"
)

// libModule is a compiled library module. It is immutable.
type libModule struct {
	name string // lib:LIBRARY/MODULE
	prg  *goja.Program
	// deps are the library modules its body requires, by the string it requires them with.
	deps map[string]*libModule
}

// CompileLinked is Compile with require("lib:LIBRARY/MODULE") resolved through l.
func (c Compiler) CompileLinked(name, source string, l scripting.Linker) (scripting.Program, error) {
	return c.compile(name, source, l)
}

var _ scripting.LinkingCompiler = Compiler{}

// CompileModule compiles a library module (see libModule).
func (c Compiler) CompileModule(name, source string, l scripting.Linker) (any, error) {
	ref, _, err := scripting.ParseLibraryRef(name)
	if err != nil {
		return nil, err
	}
	astProg, err := parseSource(name, source)
	if err != nil {
		return nil, err
	}
	m := &libModule{name: name}
	if m.deps, err = link(name, astProg, l, ref.Library); err != nil {
		return nil, err
	}
	if m.prg, err = compileWrapped(name, modulePrefix+source+"\n})", shiftModuleLine); err != nil {
		return nil, err
	}
	return m, nil
}

func shiftModuleLine(e *scripting.CompileError) *scripting.CompileError {
	if e.Line == 1 {
		e.Column = max(1, e.Column-len(modulePrefix))
	}
	return e
}

// link resolves every require of a library module in prog through l (nil: none offered).
// from is the library of the module being compiled, "" for a hook.
func link(name string, prog *ast.Program, l scripting.Linker, from string) (map[string]*libModule, error) {
	var deps map[string]*libModule
	var err error
	findRequires(reflect.ValueOf(prog), func(lit *ast.StringLiteral) bool {
		spec := lit.Value.String()
		ref, isLib, perr := scripting.ParseLibraryRef(spec)
		if !isLib || deps[spec] != nil {
			return true
		}
		fail := func(msg string) bool {
			pos := prog.File.Position(int(lit.Idx) - prog.File.Base())
			err = &scripting.CompileError{Language: scripting.JavaScript, File: name, Line: pos.Line, Column: pos.Column,
				Msg: "require(" + lit.Literal + "): " + msg}
			return false
		}
		if perr != nil {
			return fail(perr.Error())
		}
		if l == nil {
			return fail("library modules cannot be required here (no libraries are offered)")
		}
		m, lerr := l.Module(from, ref)
		if lerr != nil {
			return fail(lerr.Error())
		}
		if deps == nil {
			deps = map[string]*libModule{}
		}
		deps[spec] = m.(*libModule)
		return true
	})
	return deps, err
}

// findRequires calls found for the string literal of every require("...") below v, until
// found returns false.
func findRequires(v reflect.Value, found func(*ast.StringLiteral) bool) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().PkgPath() != astPkg {
			return true
		}
		if call, ok := v.Interface().(*ast.CallExpression); ok {
			if id, ok := call.Callee.(*ast.Identifier); ok && id.Name == "require" && len(call.ArgumentList) == 1 {
				if lit, ok := call.ArgumentList[0].(*ast.StringLiteral); ok && !found(lit) {
					return false
				}
			}
		}
		return findRequires(v.Elem(), found)
	case reflect.Interface:
		if v.IsNil() {
			return true
		}
		return findRequires(v.Elem(), found)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && !findRequires(v.Field(i), found) {
				return false
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if !findRequires(v.Index(i), found) {
				return false
			}
		}
	}
	return true
}

// requireLibrary returns the exports of the library module spec names among deps (the
// modules linked by the hook or module requiring it), running its body on first require in
// this call.
func (cs *callState) requireLibrary(spec string, deps map[string]*libModule) goja.Value {
	m, ok := deps[spec]
	if !ok {
		panic(cs.newError(fmt.Sprintf("require: %s was not linked when the hook was compiled: require a library module with a string literal", spec)))
	}
	if v, ok := cs.libExports[m]; ok {
		return v
	}
	rt := cs.rt
	fn, err := rt.RunProgram(m.prg)
	if err != nil {
		panic(err)
	}
	body, ok := goja.AssertFunction(fn)
	if !ok {
		panic(cs.newError("internal error: library module wrapper is not a function"))
	}
	exports := rt.NewObject()
	module := rt.NewObject()
	must(module.Set("exports", exports))
	if cs.libExports == nil {
		cs.libExports = map[*libModule]goja.Value{}
	}
	cs.libExports[m] = exports // a partial view for the modules it requires, as CommonJS does
	req := rt.ToValue(func(call goja.FunctionCall) goja.Value { return cs.requireFrom(call, m.deps) })
	if _, err := body(goja.Undefined(), exports, module, req, cs.h.addFn, cs.h.arithFn); err != nil {
		delete(cs.libExports, m)
		panic(err)
	}
	v := module.Get("exports")
	cs.libExports[m] = v
	return v
}

// requireFrom is require as seen by code whose library references are deps: a library
// module, or a stdlib module.
func (cs *callState) requireFrom(call goja.FunctionCall, deps map[string]*libModule) goja.Value {
	name := call.Argument(0).String()
	if strings.HasPrefix(name, scripting.LibraryPrefix) {
		return cs.requireLibrary(name, deps)
	}
	if _, ok := cs.p.modules.byName[name]; !ok {
		panic(cs.newError(fmt.Sprintf("require: only stdlib modules (%s) and library modules (lib:LIBRARY/MODULE) can be required, not %q",
			strings.Join(cs.p.modules.names, ", "), name)))
	}
	return cs.module(name)
}
