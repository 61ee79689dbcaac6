package javascript

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// BigInts. goja computes BigInt arithmetic with math/big in one instruction, and the size
// of a result can be exponential in the source: `2n ** (2n ** 40n)` asks for 128 GiB,
// `1n << 10000000000n` for 1.2 GiB, BigInt.asIntN(2 ** 40, 1n) makes 2^(2^40) before it
// reduces, and goja's compiler folds such expressions of literals at compile time, so the
// first two killed the process when the hook was compiled. Converting a BigInt to or from
// decimal text costs time quadratic in its length (seconds at a few million bits).
//
// So a BigInt is limited to MaxBigIntBits, as every engine limits its size (V8 at 2^30
// bits): a result that would be larger throws a RangeError. The operators that can make a
// result much larger than their operands — `*`, `**`, `<<` and `>>` (a negative shift
// count shifts left), and their assignments — are rewritten at compile time (as `+` is,
// guard_add.go) into a call of $metascript$arith when no operand is a literal other than a
// BigInt, which also keeps goja from folding them; BigInt() of a string and BigInt.asIntN
// and asUintN are checked before they run. `+` and `-` add at most one bit per step.
//
// Not covered: comparing a BigInt with a string (`1n < s`, `1n == s`) parses the string as
// goja's own instruction, in time quadratic in its length.
const MaxBigIntBits = 1 << 18

func init() { registerGuards("bigint", (*hardRuntime).installBigIntGuards) }

const arithName = "$metascript$arith"

// The operations of $metascript$arith, its first argument.
const (
	opMul = iota
	opPow
	opShl
	opShr
)

var arithOps = map[token.Token]int{token.MULTIPLY: opMul, token.EXPONENT: opPow,
	token.SHIFT_LEFT: opShl, token.SHIFT_RIGHT: opShr}

// arithSource names the programs below in stacks, which leave them out.
const arithSource = "<arith>"

// arithProgram evaluates to a function of the Go arith that returns [the operations on
// primitives, the conversion of object operands to primitives (-(-x) is ToNumeric), which
// calls arith again with them].
var arithProgram = goja.MustCompile(arithSource, `(function (arith) {
  return [function (op, a, b) {
    switch (op) {
    case 0: return a * b;
    case 1: return a ** b;
    case 2: return a << b;
    default: return a >> b;
    }
  }, function (op, a, b) {
    a = -(-a);
    return arith(op, a, -(-b));
  }];
})`, true)

// rewriteArith returns the guarded form of e if it is one of the operators above, or nil.
func rewriteArith(e ast.Expression) ast.Expression {
	switch e := e.(type) {
	case *ast.BinaryExpression:
		if op, ok := arithOps[e.Operator]; ok && !isPrimitiveLiteral(e.Left) && !isPrimitiveLiteral(e.Right) {
			return arithCall(op, e.Left, e.Right)
		}
	case *ast.AssignExpression:
		if op, ok := arithOps[e.Operator]; ok && !isPrimitiveLiteral(e.Right) {
			if again := repeatable(e.Left); again != nil {
				return &ast.AssignExpression{Operator: token.ASSIGN, Left: e.Left, Right: arithCall(op, again, e.Right)}
			}
		}
	}
	return nil
}

func arithCall(op int, a, b ast.Expression) *ast.CallExpression {
	return &ast.CallExpression{Callee: &ast.Identifier{Name: arithName, Idx: a.Idx0()}, LeftParenthesis: a.Idx0(),
		ArgumentList:     []ast.Expression{&ast.NumberLiteral{Idx: a.Idx0(), Literal: "0", Value: int64(op)}, a, b},
		RightParenthesis: b.Idx1()}
}

// isPrimitiveLiteral reports whether e is a literal that is not a BigInt: with one, the
// operation is not a BigInt one (goja throws for a mix).
func isPrimitiveLiteral(e ast.Expression) bool {
	if n, ok := e.(*ast.NumberLiteral); ok {
		_, isBig := n.Value.(*big.Int)
		return !isBig
	}
	return isLiteral(e)
}

// arith is $metascript$arith(op, a, b): the operation, with a BigInt result's size
// checked first.
func (h *hardRuntime) arith(c goja.FunctionCall) goja.Value {
	op, a, b := c.Argument(0), c.Argument(1), c.Argument(2)
	_, aObj := a.(*goja.Object)
	_, bObj := b.(*goja.Object)
	switch {
	case op.ToInteger() == opMul && plainPrimitive(a) && plainPrimitive(b):
		return h.rt.ToValue(a.ToFloat() * b.ToFloat())
	case aObj || bObj:
		return call(h.arithConvert, goja.Undefined(), op, a, b)
	case goja.IsBigInt(a) && goja.IsBigInt(b):
		x, y := a.Export().(*big.Int), b.Export().(*big.Int)
		if bits := resultBits(int(op.ToInteger()), x, y); bits > MaxBigIntBits {
			h.bigIntTooLarge(bits)
		}
	}
	return call(h.arithPrimitive, goja.Undefined(), op, a, b)
}

// resultBits is a lower bound of the bit length of the result of op on x and y.
func resultBits(op int, x, y *big.Int) float64 {
	if x.Sign() == 0 {
		return 0
	}
	lx := float64(x.BitLen())
	shift := func(n *big.Int) float64 {
		if n.Sign() <= 0 {
			return 0
		}
		f, _ := new(big.Float).SetInt(n).Float64()
		return lx + f
	}
	switch op {
	case opMul:
		return lx + float64(y.BitLen()) - 1
	case opPow:
		if lx <= 1 || y.Sign() <= 0 {
			return 1 // |x| <= 1, or goja throws for a negative exponent
		}
		f, _ := new(big.Float).SetInt(y).Float64()
		return (lx-1)*f + 1 // |x| >= 2^(lx-1)
	case opShl:
		return shift(y)
	default:
		return shift(new(big.Int).Neg(y))
	}
}

func (h *hardRuntime) bigIntTooLarge(bits float64) {
	panic(h.newRangeError("Maximum BigInt size exceeded: the result would have at least %.0f bits, more than the limit of %d", bits, MaxBigIntBits))
}

func (h *hardRuntime) newRangeError(format string, args ...any) *goja.Object {
	e, err := h.rt.New(h.global.Get("RangeError"), h.rt.ToValue(fmt.Sprintf(format, args...)))
	must(err)
	return e
}

// installBigIntGuards makes $metascript$arith, which each call's wrapper is handed, replaces
// the global BigInt by a proxy that checks BigInt(string), and wraps BigInt.asIntN and
// asUintN.
func (h *hardRuntime) installBigIntGuards() {
	rt := h.rt
	h.arithFn = rt.ToValue(h.arith).(*goja.Object)
	must(h.arithFn.DefineDataProperty("name", rt.ToValue(arithName), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	mk, err := rt.RunProgram(arithProgram)
	must(err)
	makeOps, _ := goja.AssertFunction(mk)
	ops, err := makeOps(goja.Undefined(), h.arithFn)
	must(err)
	h.arithPrimitive, _ = goja.AssertFunction(ops.(*goja.Object).Get("0"))
	h.arithConvert, _ = goja.AssertFunction(ops.(*goja.Object).Get("1"))

	ctor := h.global.Get("BigInt").(*goja.Object)
	proxy := rt.ToValue(rt.NewProxy(ctor, &goja.ProxyTrapConfig{
		Apply: func(target *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			if len(args) > 0 && goja.IsString(args[0]) {
				if bits := stringBits(args[0].String()); bits > MaxBigIntBits {
					h.bigIntTooLarge(bits)
				}
			}
			f, _ := goja.AssertFunction(target)
			return call(f, this, args...)
		},
	})).(*goja.Object)
	proto := ctor.Get("prototype").(*goja.Object)
	must(proto.DefineDataProperty("constructor", proxy, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	must(h.global.DefineDataProperty("BigInt", proxy, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE))

	// asIntN(bits, x) and asUintN(bits, x) make 2^bits before they reduce x. With more bits
	// than the limit, x (itself within it) is its own result, but for a negative x given to
	// asUintN, whose result has bits bits.
	origAsIntN, _ := goja.AssertFunction(ctor.Get("asIntN"))
	asN := func(unsigned bool) func(goja.Callable, goja.FunctionCall) goja.Value {
		return func(orig goja.Callable, c goja.FunctionCall) goja.Value {
			bits, x := c.Argument(0).ToNumber(), c.Argument(1)
			if goja.IsString(x) {
				if n := stringBits(x.String()); n > MaxBigIntBits {
					h.bigIntTooLarge(n)
				}
			}
			if f := bits.ToFloat(); !(f > MaxBigIntBits) || math.IsInf(f, 0) || len(c.Arguments) < 2 {
				return call(orig, goja.Undefined(), bits, x)
			}
			if !goja.IsBigInt(x) {
				// ToBigInt, with its exceptions: a result within the limit is x itself.
				x = call(origAsIntN, goja.Undefined(), rt.ToValue(2*MaxBigIntBits), x)
			}
			if unsigned && x.Export().(*big.Int).Sign() < 0 {
				h.bigIntTooLarge(bits.ToFloat())
			}
			return x
		}
	}
	h.wrap(ctor, "asIntN", asN(false))
	h.wrap(ctor, "asUintN", asN(true))
}

// stringBits is a lower bound of the bit length of BigInt(s), for s of digits in the
// radix its prefix names; 0 if s is not such a string (BigInt throws for it, or it is
// small).
func stringBits(s string) float64 {
	s = strings.TrimSpace(s)
	radix := 10.0
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			radix, s = 16, s[2:]
		case 'o', 'O':
			radix, s = 8, s[2:]
		case 'b', 'B':
			radix, s = 2, s[2:]
		}
	} else if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	s = strings.TrimLeft(s, "0")
	if len(s) <= 1 {
		return 0
	}
	return float64(len(s)-1)*math.Log2(radix) + 1
}
