package javascript

import (
	"math"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting/internal/cost"
)

// Guards of the built-ins that make an array, or a string of an array, in one call. Repeated
// references amplify: a thousand references to one array of ten thousand elements flatten
// or concatenate into ten million elements. Each guard reserves, before the built-in runs:
//
//	Array(n), new Array(n)           n elements (goja allocates lazily; refused early anyway)
//	Array.prototype.fill             the filled range
//	Array.prototype.join (toString)  the joined length, nested arrays included
//	Array.prototype.concat           the elements of this and of the array arguments
//	Array.prototype.flat             the flattened length, to the given depth

func init() { registerGuards("array", (*hardRuntime).installArrayGuards) }

// maxJoinDepth bounds the nesting of arrays joined into one string.
const maxJoinDepth = 1000

func (h *hardRuntime) installArrayGuards() {
	rt := h.rt
	arrayProto := h.prototype("Array")
	h.wrap(arrayProto, "fill", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if o, ok := c.This.(*goja.Object); ok {
			l := toLength(o.Get("length"))
			start := relIndex(c.Argument(1), l, 0)
			end := relIndex(c.Argument(2), l, l)
			if end > start {
				h.cur.reserve(cost.Mul(end-start, cost.Element))
			}
		}
		return call(orig, c.This, c.Arguments...)
	})
	h.wrap(arrayProto, "join", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if o, ok := c.This.(*goja.Object); ok {
			cs := h.cur
			sep := 1
			if s := c.Argument(0); !goja.IsUndefined(s) {
				sep = len(s.String())
			}
			cs.joinDepth++
			defer func() { cs.joinDepth-- }()
			if cs.joinDepth > maxJoinDepth {
				panic(rt.NewTypeError("Array.prototype.join: arrays nest deeper than %d levels", maxJoinDepth))
			}
			cs.checkLoop(toLength(o.Get("length")))
			cs.reserve(joinSize(rt, o, int64(sep), 0))
		}
		return call(orig, c.This, c.Arguments...)
	})
	h.wrap(arrayProto, "flat", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if o, ok := c.This.(*goja.Object); ok {
			depth := 1.0
			if d := c.Argument(0); !goja.IsUndefined(d) {
				depth = d.ToNumber().ToFloat()
			}
			budget := h.cur.budget().MaxMemory / cost.Element
			h.cur.reserve(cost.Mul(flatLen(h.rt, o, depth, budget+1, 0), cost.Element))
		}
		return call(orig, c.This, c.Arguments...)
	})
	h.wrap(arrayProto, "concat", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if o, ok := c.This.(*goja.Object); ok {
			n := concatLen(o)
			for _, a := range c.Arguments {
				n = cost.Add(n, concatLen(a))
			}
			h.cur.reserve(cost.Mul(n, cost.Element))
		}
		return call(orig, c.This, c.Arguments...)
	})
	h.array = h.guardedArray(h.global.Get("Array").(*goja.Object))
}

// guardedArray returns a proxy of the Array constructor that checks Array(n) and new
// Array(n) against the memory budget.
func (h *hardRuntime) guardedArray(arrayCtor *goja.Object) *goja.Object {
	return h.guardedConstructor(arrayCtor, func(args []goja.Value) {
		if len(args) == 1 {
			if n := args[0].ToNumber().ToFloat(); n > 0 && !math.IsNaN(n) {
				h.cur.reserve(int64(math.Min(n, math.MaxInt64/cost.Element)) * cost.Element)
			}
		}
	})
}

// relIndex is the spec's relative index: negative values count from the end, clamped to
// [0, l]; undefined means def.
func relIndex(v goja.Value, l, def int64) int64 {
	if goja.IsUndefined(v) {
		return def
	}
	f := v.ToFloat()
	if math.IsNaN(f) {
		return 0
	}
	if f < 0 {
		return int64(math.Max(float64(l)+math.Trunc(f), 0))
	}
	return int64(math.Min(math.Trunc(f), float64(l)))
}

// joinSize estimates the length of o.join(sep): exact for strings and numbers, recursive
// for nested arrays (goja returns "" for a cycle), a small constant for other objects (whose
// toString runs script code, interruptible by the watchdog).
func joinSize(rt *goja.Runtime, o *goja.Object, sep int64, depth int) int64 {
	l := toLength(o.Get("length"))
	if depth > maxJoinDepth {
		return 0
	}
	total := cost.Mul(l, sep)
	if o.ClassName() != "Array" || l > 1<<24 {
		// Not a plain array, or holes the original will walk: charge the separators only.
		return total
	}
	for _, e := range elements(rt, o, l) {
		switch {
		case e == nil || goja.IsUndefined(e) || goja.IsNull(e):
		case goja.IsString(e):
			total += int64(len(e.String()))
		case isArrayObject(e):
			total += joinSize(rt, e.(*goja.Object), 1, depth+1)
		default:
			total += 24
		}
		if total < 0 {
			return math.MaxInt64
		}
	}
	return total
}

// concatLen is what concat adds for v: the length of an array or of an object made
// spreadable with Symbol.isConcatSpreadable, else 1.
func concatLen(v goja.Value) int64 {
	if o, ok := v.(*goja.Object); ok {
		if s := o.GetSymbol(goja.SymIsConcatSpreadable); s != nil && !goja.IsUndefined(s) {
			if s.ToBoolean() {
				return toLength(o.Get("length"))
			}
			return 1
		}
	}
	return arrayLen(v)
}

// flatLen is the length of o.flat(depth), counted until it passes limit. Holes and
// array-likes count as elements: an upper bound.
func flatLen(rt *goja.Runtime, o *goja.Object, depth float64, limit int64, nesting int) int64 {
	l := toLength(o.Get("length"))
	if depth < 1 || math.IsNaN(depth) || nesting > maxJoinDepth || o.ClassName() != "Array" || l > 1<<24 {
		return l
	}
	total := int64(0)
	for _, e := range elements(rt, o, l) {
		if isArrayObject(e) {
			total = cost.Add(total, flatLen(rt, e.(*goja.Object), depth-1, limit-total, nesting+1))
		} else {
			total++
		}
		if total > limit {
			break
		}
	}
	return total
}
