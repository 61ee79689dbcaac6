package javascript

import (
	"math"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// Guards of the built-ins that copy references into a new array or string in one call, where
// repeated references amplify: a thousand references to one array of ten thousand elements
// flatten or concatenate into ten million elements. See installGuards for the list.

// bytesPerRegexpSplitChar bounds what a split by a RegExp costs per character of its input:
// goja finds every match before it applies the limit, allocating per match.
const bytesPerRegexpSplitChar = 256

func (h *hardRuntime) installArrayGuards(arrayProto, stringProto *goja.Object) {
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
	h.wrap(stringProto, "split", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := thisString(c.This)
		sep := c.Argument(0)
		sepObj, isObj := sep.(*goja.Object)
		if !ok || (isObj && sepObj.ClassName() != "RegExp") {
			// A separator object of the hook's own splits in script code.
			return call(orig, c.This, c.Arguments...)
		}
		str, _ := toJSString(h.rt, s)
		n := int64(str.Length())
		if n*cost.SplitPiece < scripting.SmallAlloc {
			return call(orig, s, c.Arguments...)
		}
		cs := h.cur
		if isObj {
			cs.reserve(cost.Mul(n, bytesPerRegexpSplitChar))
			return call(orig, s, c.Arguments...)
		}
		// At most n+1 pieces. Rather than counting them first, split with a limit the
		// budget affords and refuse if the split reaches it.
		limit := int64(math.MaxUint32)
		if l := c.Argument(1); !goja.IsUndefined(l) {
			limit = int64(uint32(l.ToInteger()))
		}
		affordable := max((cs.watch.Memory().Limit()-cs.watch.Memory().Used())/cost.SplitPiece, 1)
		if limit <= affordable || n+1 <= affordable {
			return call(orig, s, sep, h.rt.ToValue(limit))
		}
		res := call(orig, s, sep, h.rt.ToValue(affordable))
		if arrayLen(res) >= affordable {
			cs.reserve(cost.Mul(n+1, cost.SplitPiece))
		}
		return res
	})
}

// arrayLen is the length of v if it is an array, else 1.
func arrayLen(v goja.Value) int64 {
	if isArrayObject(v) {
		return toLength(v.(*goja.Object).Get("length"))
	}
	return 1
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
