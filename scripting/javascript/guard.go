package javascript

import (
	"math"

	"github.com/dop251/goja"
)

// goja interrupts a hook only between instructions, and the memory watchdog only through
// that interrupt, so a built-in that builds a huge value in one call would allocate it all
// before either could act. The built-ins below can amplify their input that way; each is
// replaced, in every Runtime, by a wrapper that estimates what the call will allocate,
// reserves it against the memory budget (callState.reserve, which refuses with a budget
// error the hook cannot catch) and only then calls the original.
//
// Estimates are upper bounds in bytes: two bytes per UTF-16 code unit (goja stores ASCII
// strings in one), valueBytes per array element. They make a refusal conservative; a call
// that passes allocates at most its estimate.
//
// Guarded: String.prototype.repeat, padStart, padEnd, concat, split, replace and
// replaceAll; Array.from; Array.prototype.fill, join (and so toString and String(array)),
// concat and flat; Function.prototype.apply, Reflect.apply and Reflect.construct (their
// argument lists); JSON.stringify (charged per value it writes, which bounds aliasing
// bombs, and stopped by a timeout). Array(n) and new Array(n) need no guard: goja records
// the length and allocates nothing until elements are written.

// valueBytes is what one array element or argument costs: a goja.Value interface.
const valueBytes = 16

// charBytes is the most one UTF-16 code unit of a string costs.
const charBytes = 2

// saturating returns a*b, or math.MaxInt64 when the product overflows or is negative.
func saturating(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func (cs *callState) installGuards() {
	rt := cs.rt
	strProto := rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	arrayCtor := rt.Get("Array").ToObject(rt)
	arrProto := arrayCtor.Get("prototype").ToObject(rt)
	funcProto := rt.Get("Function").ToObject(rt).Get("prototype").ToObject(rt)
	reflect := rt.Get("Reflect").ToObject(rt)
	json := rt.Get("JSON").ToObject(rt)

	cs.guard(strProto, "repeat", func(c goja.FunctionCall) {
		count := c.Argument(0).ToInteger()
		cs.reserve(saturating(cs.strLen(c.This), saturating(count, charBytes)))
	})
	pad := func(c goja.FunctionCall) {
		cs.reserve(saturating(c.Argument(0).ToInteger(), charBytes))
	}
	cs.guard(strProto, "padStart", pad)
	cs.guard(strProto, "padEnd", pad)
	cs.guard(strProto, "concat", func(c goja.FunctionCall) {
		n := cs.strLen(c.This)
		for _, a := range c.Arguments {
			n += cs.strLen(a)
		}
		cs.reserve(saturating(n, charBytes))
	})
	cs.guard(strProto, "split", func(c goja.FunctionCall) {
		// At most one piece per code unit, each a string value.
		cs.reserve(saturating(cs.strLen(c.This)+1, 2*valueBytes))
	})
	replace := func(c goja.FunctionCall) {
		r := c.Argument(1)
		if _, isFunc := goja.AssertFunction(r); isFunc {
			return // each replacement is computed by hook code, which is interruptible
		}
		// At most one match per code unit, plus the subject.
		n := cs.strLen(c.This)
		cs.reserve(saturating(n+saturating(n+1, cs.strLen(r)), charBytes))
	}
	cs.guard(strProto, "replace", replace)
	cs.guard(strProto, "replaceAll", replace)

	cs.guard(arrayCtor, "from", func(c goja.FunctionCall) {
		cs.reserve(saturating(cs.lengthOf(c.Argument(0)), valueBytes))
	})
	cs.guard(arrProto, "fill", func(c goja.FunctionCall) {
		n := cs.lengthOf(c.This)
		start := relativeIndex(c.Argument(1), n, 0)
		end := relativeIndex(c.Argument(2), n, n)
		cs.reserve(saturating(end-start, valueBytes))
	})
	cs.guard(arrProto, "join", func(c goja.FunctionCall) {
		sep := int64(1)
		if s := c.Argument(0); !goja.IsUndefined(s) {
			sep = cs.strLen(s)
		}
		cs.reserve(cs.joinEstimate(c.This, sep, nil))
	})
	cs.guard(arrProto, "concat", func(c goja.FunctionCall) {
		n := cs.lengthOf(c.This)
		for _, a := range c.Arguments {
			if o, ok := a.(*goja.Object); ok && o.ClassName() == "Array" {
				n += cs.lengthOf(a)
			} else {
				n++
			}
		}
		cs.reserve(saturating(n, valueBytes))
	})
	cs.guard(arrProto, "flat", func(c goja.FunctionCall) {
		depth := int64(1)
		if d := c.Argument(0); !goja.IsUndefined(d) {
			depth = d.ToInteger()
		}
		limit := cs.budget.MaxMemory / valueBytes
		cs.reserve(saturating(cs.flatCount(c.This, depth, limit, nil), valueBytes))
	})

	argList := func(i int) func(goja.FunctionCall) {
		return func(c goja.FunctionCall) {
			cs.reserve(saturating(cs.lengthOf(c.Argument(i)), valueBytes))
		}
	}
	cs.guard(funcProto, "apply", argList(1))
	cs.guard(reflect, "apply", argList(2))
	cs.guard(reflect, "construct", argList(1))

	cs.guardStringify(json)
}

// guard replaces obj[name] by a function that runs check, which panics to refuse, and then
// the original.
func (cs *callState) guard(obj *goja.Object, name string, check func(goja.FunctionCall)) {
	orig, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		panic("javascript: no built-in " + name + " to guard")
	}
	f := cs.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		check(c)
		v, err := orig(c.This, c.Arguments...)
		if err != nil {
			panic(err) // rethrown as the same JavaScript exception, or an uncatchable interrupt
		}
		return v
	}).(*goja.Object)
	_ = f.DefineDataProperty("name", cs.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = obj.DefineDataProperty(name, f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// strLen is the length in code units of v as a string, without converting objects (whose
// toString is hook code, interruptible and guarded itself): they count as their default
// "[object Object]".
func (cs *callState) strLen(v goja.Value) int64 {
	if s, ok := v.(goja.String); ok {
		return int64(s.Length())
	}
	if _, ok := v.(*goja.Object); ok {
		return 15
	}
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return 9
	}
	return int64(len(v.String())) // numbers and booleans: short
}

// lengthOf is v.length for an array-like object, 0 otherwise. It does not run getters
// other than a length accessor the hook defined.
func (cs *callState) lengthOf(v goja.Value) int64 {
	o, ok := v.(*goja.Object)
	if !ok {
		if s, ok := v.(goja.String); ok {
			return int64(s.Length())
		}
		return 0
	}
	l := o.Get("length")
	if l == nil {
		return 0
	}
	n := l.ToInteger()
	if n < 0 {
		return 0
	}
	return n
}

// relativeIndex resolves a start or end argument of fill (negative counts from the end).
func relativeIndex(v goja.Value, n, def int64) int64 {
	if goja.IsUndefined(v) {
		return def
	}
	i := v.ToInteger()
	if i < 0 {
		i = max(n+i, 0)
	}
	return min(i, n)
}

// joinEstimate bounds the bytes join(sep) builds from v, following nested arrays (which
// join themselves with ",") and charging at least valueBytes per element, so that the walk
// over a huge or aliased structure stops as soon as it passes the budget. path holds the
// arrays being walked: a cyclic reference joins as "", as in goja.
func (cs *callState) joinEstimate(v goja.Value, sep int64, path []*goja.Object) int64 {
	o, ok := v.(*goja.Object)
	if !ok {
		return 0
	}
	for _, p := range path {
		if p == o {
			return 0
		}
	}
	path = append(path, o)
	limit := cs.budget.MaxMemory
	n := cs.lengthOf(o)
	total := saturating(n, max(sep*charBytes, valueBytes))
	for i := int64(0); i < n && total <= limit; i++ {
		if i&1023 == 1023 {
			cs.checkStopped()
		}
		e := o.Get(indexKey(i))
		if eo, ok := e.(*goja.Object); ok && eo.ClassName() == "Array" {
			total += cs.joinEstimate(e, 1, path)
		} else if e != nil {
			total += saturating(cs.strLen(e), charBytes)
		}
	}
	return total
}

// flatCount bounds the elements flat(depth) produces from v, stopping at limit.
func (cs *callState) flatCount(v goja.Value, depth, limit int64, path []*goja.Object) int64 {
	o, ok := v.(*goja.Object)
	if !ok {
		return 1
	}
	for _, p := range path {
		if p == o {
			return limit + 1 // flat of a cyclic array never ends
		}
	}
	path = append(path, o)
	n := cs.lengthOf(o)
	if depth <= 0 {
		return n
	}
	var total int64
	for i := int64(0); i < n && total <= limit; i++ {
		if i&1023 == 1023 {
			cs.checkStopped()
		}
		e := o.Get(indexKey(i))
		if eo, ok := e.(*goja.Object); ok && eo.ClassName() == "Array" {
			total += cs.flatCount(e, depth-1, limit, path)
		} else {
			total++
		}
	}
	return total
}

// guardStringify charges JSON.stringify per value written: the original is called with a
// replacer (composed with the hook's own replacer function, if any) that reserves what each
// value adds and checks for interruption, so neither an aliasing bomb (a = [a, a], 30 times
// over) nor a huge structure can run or allocate unbounded inside the built-in.
func (cs *callState) guardStringify(json *goja.Object) {
	orig, _ := goja.AssertFunction(json.Get("stringify"))
	f := cs.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		var userReplacer goja.Callable
		args := []goja.Value{c.Argument(0), goja.Undefined(), c.Argument(2)}
		if r, ok := goja.AssertFunction(c.Argument(1)); ok {
			userReplacer = r
		} else if !goja.IsUndefined(c.Argument(1)) && !goja.IsNull(c.Argument(1)) {
			// An array replacer (a property allow-list) is passed as it is: it can only
			// shrink objects, and arrays under it are charged by the memory watchdog.
			args[1] = c.Argument(1)
			return cs.callOrPanic(orig, c.This, args)
		}
		var written, calls int64
		indent := int64(1) + cs.strLen(c.Argument(2))
		args[1] = cs.rt.ToValue(func(rc goja.FunctionCall) goja.Value {
			v := rc.Argument(1)
			if userReplacer != nil {
				v = cs.callOrPanic(userReplacer, rc.This, rc.Arguments)
			}
			written += valueBytes + indent*charBytes + saturating(cs.strLen(rc.Argument(0)), charBytes)
			if s, ok := v.(goja.String); ok {
				written += saturating(int64(s.Length()), charBytes)
			}
			if calls++; calls&1023 == 0 || written > cs.budget.MaxMemory {
				cs.checkStopped()
				cs.reserve(written)
			}
			return v
		})
		return cs.callOrPanic(orig, c.This, args)
	}).(*goja.Object)
	_ = f.DefineDataProperty("name", cs.rt.ToValue("stringify"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = json.DefineDataProperty("stringify", f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

func (cs *callState) callOrPanic(f goja.Callable, this goja.Value, args []goja.Value) goja.Value {
	v, err := f(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}
