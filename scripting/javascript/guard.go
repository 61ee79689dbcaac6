package javascript

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/dop251/goja"
)

// Guards. goja's built-ins run as Go code that neither the allocation watchdog nor the
// timeout can interrupt, so the ones whose result, or the work on the way to it, can be far
// larger than their inputs are wrapped, once per pooled Runtime before it is frozen, by a
// check that asks the current call's budget (callState.reserve) before the original runs.
// The guards come in families, one file each (guard_<family>.go), whose comment says what
// each guard checks; every family registers itself in guardFamilies, and installGuards
// installs them all.
//
// A refusal stops the hook with a *scripting.BudgetError (it cannot be caught; the BigInt
// limit is a RangeError, as in other engines). Growth that takes many instructions (a push
// per element, a literal appended per step) is left to the watchdog: goja checks for
// interrupts between instructions.
//
// Not covered (a 200 ms, 32 MiB budget; what the process allocated in the call):
//   - RegExp.prototype[Symbol.split] called directly (not through String.prototype.split)
//     finds every match at once: 1.2 GiB for a 4 MiB input. (match and replace with a
//     global RegExp run one exec at a time from script on long inputs: guard_regexp.go.)
//   - normalize 2 ×; `+` of objects whose toString doubles a string (goja's own `+`) up to
//     4 × under -race; a regular-expression literal is not checked (its pattern is part of
//     the source, at most MaxSourceBytes).
//   - Comparing a BigInt with a decimal string (`1n < s`) parses it in goja's comparison
//     instruction in quadratic time: 3 s and 2.3 GiB for 1 MiB. A decimal BigInt literal of
//     a million digits takes 3.5 s to compile (once per source: compiles are cached).
//   - split by a separator object of the hook's own, which loops in Go over the matches its
//     Symbol.split finds; the Map and Set iterators (bounded by the entries allocated).

// guardFamilies is the registry of guard families by name, the name of the family's file
// (guard_<name>.go). Each file registers its family from an init function.
var guardFamilies = map[string]func(h *hardRuntime){}

func registerGuards(family string, install func(h *hardRuntime)) {
	if _, dup := guardFamilies[family]; dup {
		panic("guard family registered twice: " + family)
	}
	guardFamilies[family] = install
}

// installGuards installs every guard family, in the order of their names. A family may rely
// on the sandbox (installNoCodeGen) but not on another family: no built-in is wrapped by
// two (wrap panics), so the order does not change what a hook sees.
func (h *hardRuntime) installGuards() {
	h.wrapped = make(map[wrappedKey]string)
	for _, family := range slices.Sorted(maps.Keys(guardFamilies)) {
		h.family = family
		guardFamilies[family](h)
	}
	h.wrapped, h.family = nil, ""
	// The constructors' proxies (guardedConstructor) construct through Reflect.construct
	// as the hook sees it, guarded (guard_loop.go).
	h.reflectConstruct, _ = goja.AssertFunction(h.global.Get("Reflect").(*goja.Object).Get("construct"))
}

// wrappedKey names a wrapped built-in: an object and a property, "[Symbol.x]" for a symbol.
type wrappedKey struct {
	o    *goja.Object
	name string
}

// claim records that the family being installed wraps o[name], and panics if another did.
func (h *hardRuntime) claim(o *goja.Object, name string) {
	if h.wrapped == nil {
		return // not installing guards: the sandbox's own wrappers
	}
	k := wrappedKey{o, name}
	if other, ok := h.wrapped[k]; ok {
		panic(fmt.Sprintf("guard families %s and %s both wrap %s", other, h.family, name))
	}
	h.wrapped[k] = h.family
}

// guard checks a call of a built-in and calls orig, the built-in, if the call may proceed.
// It is made once per Runtime: it charges the Runtime's current call.
type guard func(orig goja.Callable, call goja.FunctionCall) goja.Value

// wrap replaces o[name] by a function that runs check.
func (h *hardRuntime) wrap(o *goja.Object, name string, check guard) {
	orig, ok := goja.AssertFunction(o.Get(name))
	if !ok {
		return
	}
	h.claim(o, name)
	fn := h.guarded(orig, check, name, o.Get(name).(*goja.Object).Get("length"))
	must(o.DefineDataProperty(name, fn, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_FALSE))
}

// wrapSymbol is wrap for a method keyed by a well-known symbol.
func (h *hardRuntime) wrapSymbol(o *goja.Object, sym *goja.Symbol, name string, length int, check guard) {
	orig, ok := goja.AssertFunction(o.GetSymbol(sym))
	if !ok {
		return
	}
	h.claim(o, name)
	fn := h.guarded(orig, check, name, h.rt.ToValue(length))
	must(o.DefineDataPropertySymbol(sym, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE))
}

// guarded is the function that runs check before orig, with the built-in's name and arity:
// goja would name it after its Go symbol.
func (h *hardRuntime) guarded(orig goja.Callable, check guard, name string, length goja.Value) *goja.Object {
	fn := h.rt.ToValue(func(c goja.FunctionCall) goja.Value { return check(orig, c) }).(*goja.Object)
	must(fn.DefineDataProperty("name", h.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	must(fn.DefineDataProperty("length", length, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	return fn
}

// call calls a built-in from a wrapper, passing its exception on.
func call(orig goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := orig(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

// prototype is the prototype object of the global constructor name.
func (h *hardRuntime) prototype(name string) *goja.Object {
	return h.global.Get(name).(*goja.Object).Get("prototype").(*goja.Object)
}

// instanceOfProgram makes the Symbol.hasInstance of a constructor's proxy: instanceof
// against the constructor itself.
var instanceOfProgram = goja.MustCompile("<instanceof>",
	`(function (ctor) { return function (v) { return v instanceof ctor; }; })`, true)

// guardedConstructor returns a proxy of a built-in constructor that runs check on the
// arguments of every call and construction first; the proxy keeps the prototype, the static
// methods, instanceof and subclassing intact. The global overlay hands it out in place of
// the constructor (sandbox.go).
func (h *hardRuntime) guardedConstructor(ctor *goja.Object, check func(args []goja.Value)) *goja.Object {
	rt := h.rt
	mk, err := rt.RunProgram(instanceOfProgram)
	must(err)
	makeHasInstance, _ := goja.AssertFunction(mk)
	hasInstance, err := makeHasInstance(goja.Undefined(), ctor)
	must(err)
	var proxyObj *goja.Object
	proxy := rt.NewProxy(ctor, &goja.ProxyTrapConfig{
		// goja's instanceof does not look through a proxy to its target's
		// Function.prototype behaviour: `[] instanceof Array` threw a TypeError.
		GetSym: func(target *goja.Object, sym *goja.Symbol, receiver goja.Value) goja.Value {
			if sym == goja.SymHasInstance {
				return hasInstance
			}
			return target.GetSymbol(sym)
		},
		Apply: func(target *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			check(args)
			f, _ := goja.AssertFunction(target)
			return call(f, this, args...)
		},
		Construct: func(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			check(args)
			if newTarget == nil || newTarget == proxyObj {
				newTarget = target
			}
			items := make([]any, len(args))
			for i, a := range args {
				items[i] = a
			}
			return call(h.reflectConstruct, goja.Undefined(), target, rt.NewArray(items...), newTarget).(*goja.Object)
		},
	})
	proxyObj = rt.ToValue(proxy).(*goja.Object)
	// The hook sees the proxy as the constructor: `[].constructor === Array` must hold.
	must(ctor.Get("prototype").(*goja.Object).DefineDataProperty("constructor", proxyObj,
		goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE))
	return proxyObj
}

// What the guards read of values, in more than one family.

// thisString returns this converted to a string primitive, unless this is null or
// undefined (the original then throws its own TypeError).
func thisString(this goja.Value) (goja.Value, bool) {
	if this == nil || goja.IsUndefined(this) || goja.IsNull(this) {
		return nil, false
	}
	return this.ToString(), true
}

// toJSString converts v as String(v) does; a symbol is returned unchanged (ok false), for
// the built-in to throw its TypeError.
func toJSString(rt *goja.Runtime, v goja.Value) (goja.String, bool) {
	switch v := v.(type) {
	case goja.String:
		return v, true
	case *goja.Symbol:
		return nil, false
	}
	return rt.ToValue(v.String()).(goja.String), true
}

// asciiType is the dynamic type goja gives strings of ASCII characters only.
var asciiType = reflect.TypeOf(goja.New().ToValue("a"))

// stringBytes is the memory s takes as part of a concatenation: a byte per character if it
// is ASCII, two otherwise (goja holds such strings as UTF-16, and so the result).
func stringBytes(s goja.String) int64 {
	if reflect.TypeOf(s) == asciiType {
		return int64(s.Length())
	}
	return 2 * int64(s.Length())
}

func toLength(v goja.Value) int64 {
	f := v.ToFloat()
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	return int64(math.Min(f, 1<<53-1))
}

// elements returns the l elements of the array o, a hole as nil. goja's ExportTo copies a
// plain array's elements in one step but panics on a hole; each index is then read instead.
func elements(rt *goja.Runtime, o *goja.Object, l int64) (elems []goja.Value) {
	defer func() {
		if recover() != nil {
			elems = make([]goja.Value, l)
			for i := range elems {
				elems[i] = o.Get(strconv.FormatInt(int64(i), 10))
			}
		}
	}()
	if err := rt.ExportTo(o, &elems); err != nil || int64(len(elems)) != l {
		panic("not a plain array")
	}
	return elems
}

func isArrayObject(v goja.Value) bool {
	o, ok := v.(*goja.Object)
	return ok && o.ClassName() == "Array"
}

// arrayLen is the length of v if it is an array, else 1.
func arrayLen(v goja.Value) int64 {
	if isArrayObject(v) {
		return toLength(v.(*goja.Object).Get("length"))
	}
	return 1
}
