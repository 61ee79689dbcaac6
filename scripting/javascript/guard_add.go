package javascript

import (
	"reflect"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// Concatenation, like the BigInt operators (guard_bigint.go), is an amplifier that no
// built-in's wrapper (guard.go) can reach: goja runs `a + b` as an instruction, and `s = s + s` doubles a string per step, each step one
// allocation twice the last, which the watchdog sees only once it is made. So Compile
// rewrites, in the hook's syntax tree,
//
//	a + b    into  $metascript$add(a, b)       when neither operand is a literal
//	x += y   into  x = $metascript$add(x, y)   when y is not a literal and x is a variable,
//	                                           or a property of a variable or of this
//
// and $metascript$add, a Go function handed to the compiled wrapper, reserves the length of
// a string result from the memory budget before it concatenates. A literal operand adds at
// most its own length, so such sums grow linearly and are left to the watchdog; so are `+=`
// on other targets (whose evaluation the rewrite would repeat), template literals, and
// operands that are objects, whose valueOf or toString decides what is concatenated: those
// are added by goja itself, unchecked.
//
// Otherwise the result is what `+` makes: strings are concatenated, other primitives are
// added as numbers (BigInts and objects go to goja's own `+`).
const addName = "$metascript$add"

func init() { registerGuards("add", (*hardRuntime).installAdd) }

// plusSource names plusProgram in stacks, which leave it out.
const plusSource = "<plus>"

var plusProgram = goja.MustCompile(plusSource, `(function (a, b) { return a + b; })`, true)

// installAdd makes $metascript$add, which each call's wrapper is handed, and keeps goja's own
// `+` for the operands it leaves to it.
func (h *hardRuntime) installAdd() {
	rt := h.rt
	plus, err := rt.RunProgram(plusProgram)
	must(err)
	h.plus, _ = goja.AssertFunction(plus)
	h.addFn = rt.ToValue(h.add).(*goja.Object)
	must(h.addFn.DefineDataProperty("name", rt.ToValue(addName), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
}

// rewriteAdds rewrites the sums, and the BigInt operators of guard_bigint.go, of the syntax
// tree below n in place.
func rewriteAdds(n ast.Node) { rewriteWalk(reflect.ValueOf(n)) }

var (
	expressionType = reflect.TypeFor[ast.Expression]()
	astPkg         = reflect.TypeFor[ast.Identifier]().PkgPath()
)

func rewriteWalk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() && v.Elem().Kind() == reflect.Struct && v.Elem().Type().PkgPath() == astPkg {
			rewriteWalk(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		rewriteWalk(v.Elem())
		if v.Type() == expressionType && v.CanSet() {
			e := v.Interface().(ast.Expression)
			r := rewriteAdd(e)
			if r == nil {
				r = rewriteArith(e)
			}
			if r != nil {
				v.Set(reflect.ValueOf(r))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				rewriteWalk(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			rewriteWalk(v.Index(i))
		}
	}
}

// rewriteAdd returns the guarded form of e, or nil to keep e.
func rewriteAdd(e ast.Expression) ast.Expression {
	switch e := e.(type) {
	case *ast.BinaryExpression:
		if e.Operator == token.PLUS && !isLiteral(e.Left) && !isLiteral(e.Right) {
			return addCall(e.Left, e.Right)
		}
	case *ast.AssignExpression:
		if e.Operator == token.PLUS && !isLiteral(e.Right) {
			if again := repeatable(e.Left); again != nil {
				return &ast.AssignExpression{Operator: token.ASSIGN, Left: e.Left, Right: addCall(again, e.Right)}
			}
		}
	}
	return nil
}

func addCall(a, b ast.Expression) *ast.CallExpression {
	return &ast.CallExpression{Callee: &ast.Identifier{Name: addName, Idx: a.Idx0()},
		LeftParenthesis: a.Idx0(), ArgumentList: []ast.Expression{a, b}, RightParenthesis: b.Idx1()}
}

// isLiteral reports whether e is a literal, whose length bounds what it adds to a sum.
func isLiteral(e ast.Expression) bool {
	switch e := e.(type) {
	case *ast.StringLiteral, *ast.NumberLiteral, *ast.BooleanLiteral, *ast.NullLiteral:
		return true
	case *ast.TemplateLiteral:
		return e.Tag == nil && len(e.Expressions) == 0
	}
	return false
}

// repeatable returns a copy of an assignment target that can be evaluated twice with no
// effect beyond reading it again: a variable, or a property of a variable or of this.
func repeatable(e ast.Expression) ast.Expression {
	switch e := e.(type) {
	case *ast.Identifier:
		c := *e
		return &c
	case *ast.DotExpression:
		switch l := e.Left.(type) {
		case *ast.Identifier:
			c, lc := *e, *l
			c.Left = &lc
			return &c
		case *ast.ThisExpression:
			c := *e
			return &c
		}
	}
	return nil
}

// add is $metascript$add: `+` with the length of a string result reserved first.
func (h *hardRuntime) add(c goja.FunctionCall) goja.Value {
	a, b := c.Argument(0), c.Argument(1)
	as, aStr := a.(goja.String)
	bs, bStr := b.(goja.String)
	switch {
	case aStr && bStr:
	case aStr && plainPrimitive(b):
		bs = h.rt.ToValue(b.String()).(goja.String)
	case bStr && plainPrimitive(a):
		as = h.rt.ToValue(a.String()).(goja.String)
	case plainPrimitive(a) && plainPrimitive(b):
		return h.rt.ToValue(a.ToFloat() + b.ToFloat())
	default:
		return call(h.plus, goja.Undefined(), a, b)
	}
	if n := int64(as.Length()) + int64(bs.Length()); n >= 1<<10 {
		h.cur.reserve(stringBytes(as) + stringBytes(bs))
	}
	return as.Concat(bs)
}

// plainPrimitive reports whether v is a primitive that `+` converts without running code or
// throwing: a number, boolean, null or undefined (not a string, symbol or BigInt).
func plainPrimitive(v goja.Value) bool {
	switch v.(type) {
	case *goja.Object, *goja.Symbol, goja.String:
		return false
	}
	return !goja.IsBigInt(v)
}
