package javascript

import (
	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting/internal/cost"
)

// Loops over a length. Most of goja's Array.prototype methods, on anything but a dense
// array, walk every index below the receiver's length in Go, whether or not anything is
// stored there, without checking for interrupts. A length costs nothing to make:
//
//	const a = []; a[2 ** 32 - 2] = 1; a.indexOf(0)        // four billion steps, minutes
//	Array.prototype.forEach.call({length: 2 ** 53 - 1}, f) // forever, f never called
//	a.sort()                                               // a 64 GiB slice: the process dies
//
// The guard bounds such a walk by the memory budget: a method that walks more indices than
// an array within the budget could hold (MaxMemory / cost.Element) is refused, as if it
// allocated them. A dense array is never refused: one that long would have passed the
// budget when it was made. Below that bound a walk costs at most some 10 ns per index
// (40 ms for the 2 Mi indices a 32 MiB budget affords).
//
// The methods that copy what they walk into a new array or an argument list
// (Function.prototype.apply, Reflect.apply and Reflect.construct, Array.from of an
// array-like that is not iterable) reserve the copy from the budget instead.

func init() { registerGuards("loop", (*hardRuntime).installLoopGuards) }

// loopingMethods are the Array.prototype methods that walk the receiver's length in Go.
// (join, fill, flat and concat have guards of their own; find and its kin call their
// callback for every index, but the callback may be a built-in.)
var loopingMethods = []string{
	"copyWithin", "every", "filter", "find", "findIndex", "findLast", "findLastIndex",
	"flatMap", "forEach", "includes", "indexOf", "lastIndexOf", "map", "reduce",
	"reduceRight", "reverse", "shift", "slice", "some", "sort", "splice", "toLocaleString",
	"toReversed", "toSorted", "toSpliced", "unshift", "with",
}

// checkLoop refuses a walk over length indices that no array within the memory budget
// could have.
func (cs *callState) checkLoop(length int64) {
	if n := cost.Mul(length, cost.Element); n > cs.budget().MaxMemory {
		cs.reserve(n)
	}
}

// receiverLength is the length of this if it is an object; primitives have short lengths
// (a string's is what it holds) or none.
func receiverLength(this goja.Value) int64 {
	if o, ok := this.(*goja.Object); ok {
		return toLength(o.Get("length"))
	}
	return 0
}

func (h *hardRuntime) installLoopGuards() {
	arrayProto := h.prototype("Array")
	for _, name := range loopingMethods {
		h.wrap(arrayProto, name, func(orig goja.Callable, c goja.FunctionCall) goja.Value {
			h.cur.checkLoop(receiverLength(c.This))
			return call(orig, c.This, c.Arguments...)
		})
	}

	// The argument lists made of an array-like.
	reserveList := func(v goja.Value) {
		if _, ok := v.(*goja.Object); ok {
			h.cur.reserve(cost.Mul(receiverLength(v), cost.Element))
		}
	}
	fnProto := h.noCodeGen.Prototype()
	h.wrap(fnProto, "apply", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		reserveList(c.Argument(1))
		return call(orig, c.This, c.Arguments...)
	})
	reflect := h.global.Get("Reflect").(*goja.Object)
	h.wrap(reflect, "apply", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		reserveList(c.Argument(2))
		return call(orig, c.This, c.Arguments...)
	})
	h.wrap(reflect, "construct", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		reserveList(c.Argument(1))
		return call(orig, c.This, c.Arguments...)
	})
	arrayCtor := h.global.Get("Array").(*goja.Object)
	symIterator := goja.SymIterator
	h.wrap(arrayCtor, "from", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if o, ok := c.Argument(0).(*goja.Object); ok {
			if it := o.GetSymbol(symIterator); it == nil || goja.IsUndefined(it) || goja.IsNull(it) {
				// Copied index by index: the copy is the walk.
				h.cur.reserve(cost.Mul(receiverLength(o), cost.Element))
			}
		}
		return call(orig, c.This, c.Arguments...)
	})
}
