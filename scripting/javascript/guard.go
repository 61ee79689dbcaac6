package javascript

import (
	"math"
	"strconv"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting/internal/cost"
)

// Pre-allocation checks. goja's built-ins run as Go code that the allocation watchdog cannot
// interrupt, so the ones whose result can be far larger than their inputs are wrapped, once
// per pooled Runtime before it is frozen, by a check that asks the current call's memory
// budget (scripting.MemoryWatch.Reserve) before the original runs:
//
//	String.prototype.repeat          count × length
//	String.prototype.padStart/padEnd target length
//	Array(n), new Array(n)           n elements (goja allocates lazily; refused early anyway)
//	Array.prototype.fill             the filled range
//	Array.prototype.join (toString)  the joined length, nested arrays included
//	String.prototype.replace(All)    with a string replacement: matches × replacement
//	String.prototype.concat          the joined length
//	String.prototype.split           the pieces, by splitting with the limit the budget affords
//	Array.prototype.concat           the elements of this and of the array arguments
//	Array.prototype.flat             the flattened length, to the given depth
//	JSON.parse                       nesting depth of the text (goja recurses per level)
//	JSON.stringify                   the output, as written; nesting; stops (guard_stringify.go)
//	RegExp [Symbol.match], [Symbol.replace]  global, long input: exec from script (guard_regexp.go)
//	a + b, x += y                    the concatenated length (guard_add.go)
//	RegExp(p), new RegExp(p), and match, matchAll, search of a string: what compiling the
//	                                 pattern costs, 32 bytes a character (guard_regexp.go)
//	Array.prototype walks            the receiver's length: indexOf, sort, forEach and the
//	                                 other methods that visit every index (guard_loop.go)
//	Function.prototype.apply,        the argument list made of an array-like
//	Reflect.apply/construct
//	Array.from of an array-like      its length
//	BigInt *, **, <<, >>, BigInt(),  the result's bit length, against MaxBigIntBits: a
//	BigInt.asIntN/asUintN            RangeError, as in any engine (guard_bigint.go)
//	generator next/return/throw      their nesting, against MaxStackDepth (guard_iter.go)
//	array and string iterator next   stop at the next step once the call is stopped, so that
//	                                 spreading a sparse array or a long string is interruptible
//	toUpperCase, toLowerCase,        the copies goja makes, per input character
//	escape, encodeURI(Component)     (guard_string.go)
//	String.raw                       its segments and substitutions
//
// A refusal stops the hook with a *scripting.BudgetError (it cannot be caught; the BigInt
// limit is a RangeError, as in other engines). Growth that
// takes many instructions (a push per element, a literal appended per step) is left to the
// watchdog: goja checks for interrupts between instructions.
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
//
// Regular expressions that need backtracking (backreferences, lookaround) run on regexp2,
// whose matching cannot be interrupted either: its timeout is set to RegexpTimeout, after
// which the match fails (no match), so a catastrophic pattern holds a CPU for at most that
// long per match call.

// MaxJSONParseDepth bounds the nesting of text given to JSON.parse.
const MaxJSONParseDepth = 1000

// maxJoinDepth bounds the nesting of arrays joined into one string.
const maxJoinDepth = 1000

// RegexpTimeout bounds one backtracking regular-expression match.
const RegexpTimeout = 250 * time.Millisecond

func init() {
	// Process-wide: regexp2 is used only by goja here.
	regexp2.DefaultMatchTimeout = RegexpTimeout
}

// wrap replaces o[name] by a function that runs check, which calls orig (the built-in) if
// the call may proceed. It runs once per Runtime: check charges the Runtime's current call.
func (h *hardRuntime) wrap(o *goja.Object, name string, check func(orig goja.Callable, call goja.FunctionCall) goja.Value) {
	orig, ok := goja.AssertFunction(o.Get(name))
	if !ok {
		return
	}
	fn := h.rt.ToValue(func(call goja.FunctionCall) goja.Value { return check(orig, call) }).(*goja.Object)
	// goja names Go functions after their Go symbol; keep the built-in's name and arity.
	must(fn.DefineDataProperty("name", h.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	must(fn.DefineDataProperty("length", o.Get(name).(*goja.Object).Get("length"), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	must(o.DefineDataProperty(name, fn, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_FALSE))
}

// call calls a built-in from a wrapper, passing its exception on.
func call(orig goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := orig(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

// installGuards wraps the amplifying built-ins: the methods of String.prototype and
// Array.prototype, JSON.parse, and the Array constructor (through a proxy the global overlay
// hands out as Array).
func (h *hardRuntime) installGuards() {
	rt := h.rt
	wrap := h.wrap
	stringProto := rt.ToValue("").ToObject(rt).Prototype()
	arrayProto := rt.NewArray().Prototype()

	wrap(stringProto, "repeat", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := thisString(c.This)
		if !ok {
			return call(orig, c.This, c.Arguments...)
		}
		n := c.Argument(0).ToNumber()
		count := n.ToFloat()
		if count > 0 && !math.IsInf(count, 0) {
			h.cur.reserve(int64(math.Min(float64(len(s.String()))*math.Floor(count), math.MaxInt64/2)))
		}
		return call(orig, s, n)
	})
	pad := func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := thisString(c.This)
		if !ok {
			return call(orig, c.This, c.Arguments...)
		}
		n := c.Argument(0).ToNumber()
		if l := n.ToFloat(); l > 0 {
			h.cur.reserve(int64(math.Min(l, math.MaxInt64/2)))
		}
		args := []goja.Value{n}
		if len(c.Arguments) > 1 {
			args = append(args, c.Arguments[1])
		}
		return call(orig, s, args...)
	}
	wrap(stringProto, "padStart", pad)
	wrap(stringProto, "padEnd", pad)

	wrap(arrayProto, "fill", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
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
	wrap(arrayProto, "join", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
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
	replace := func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := thisString(c.This)
		repl := c.Argument(1)
		if ok && goja.IsString(repl) {
			// At most one match per position plus one; '$&' and friends can expand to the
			// whole input.
			r := repl.String()
			n := int64(len(s.String()))
			dollars := int64(0)
			for i := 0; i < len(r); i++ {
				if r[i] == '$' {
					dollars++
				}
			}
			per := int64(len(r)) + dollars*n
			if per > 0 {
				h.cur.reserve(cost.Mul(n+1, per) + n)
			}
		}
		return call(orig, c.This, c.Arguments...)
	}
	wrap(stringProto, "replace", replace)
	wrap(stringProto, "replaceAll", replace)

	jsonObj := h.global.Get("JSON").(*goja.Object)
	wrap(jsonObj, "parse", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		text := c.Argument(0).ToString()
		if d := jsonDepth(text.String()); d > MaxJSONParseDepth {
			panic(rt.NewTypeError("JSON.parse: text nests deeper than %d levels", MaxJSONParseDepth))
		}
		args := append([]goja.Value{text}, c.Arguments[min(1, len(c.Arguments)):]...)
		return call(orig, c.This, args...)
	})

	h.guardStringify(jsonObj)
	h.installArrayGuards(arrayProto, stringProto)
	h.installRegExpGuards()
	h.installLoopGuards(arrayProto)
	h.installGeneratorGuard()
	h.installIteratorGuard()
	h.installStringGuards(stringProto)
	wrap(stringProto, "concat", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := thisString(c.This)
		if !ok {
			return call(orig, c.This, c.Arguments...)
		}
		// Convert first (toString may run script code), then charge the sum, then join
		// the converted strings, so that no toString runs twice.
		args := make([]goja.Value, len(c.Arguments)+1)
		var total int64
		for i, a := range append([]goja.Value{s}, c.Arguments...) {
			str, ok := toJSString(rt, a)
			if !ok {
				return call(orig, c.This, c.Arguments...)
			}
			args[i] = str
			total += stringBytes(str)
		}
		h.cur.reserve(total)
		return call(orig, args[0], args[1:]...)
	})

	plus, err := rt.RunProgram(plusProgram)
	must(err)
	h.plus, _ = goja.AssertFunction(plus)
	h.addFn = rt.ToValue(h.add).(*goja.Object)
	must(h.addFn.DefineDataProperty("name", rt.ToValue(addName), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))

	h.arithFn = rt.ToValue(h.arith).(*goja.Object)
	must(h.arithFn.DefineDataProperty("name", rt.ToValue(arithName), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	mk, err := rt.RunProgram(arithProgram)
	must(err)
	makeOps, _ := goja.AssertFunction(mk)
	ops, err := makeOps(goja.Undefined(), h.arithFn)
	must(err)
	h.arithPrimitive, _ = goja.AssertFunction(ops.(*goja.Object).Get("0"))
	h.arithConvert, _ = goja.AssertFunction(ops.(*goja.Object).Get("1"))
	h.guardBigInt()

	h.reflectConstruct, _ = goja.AssertFunction(h.global.Get("Reflect").(*goja.Object).Get("construct"))
	h.array = h.guardedArray(h.global.Get("Array").(*goja.Object))
	h.regexp = h.guardedRegExp(h.global.Get("RegExp").(*goja.Object), stringProto)
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

// thisString returns this converted to a string primitive, unless this is null or
// undefined (the original then throws its own TypeError).
func thisString(this goja.Value) (goja.Value, bool) {
	if this == nil || goja.IsUndefined(this) || goja.IsNull(this) {
		return nil, false
	}
	return this.ToString(), true
}

func toLength(v goja.Value) int64 {
	f := v.ToFloat()
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	return int64(math.Min(f, 1<<53-1))
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

// jsonDepth is the maximum nesting of brackets in JSON text, outside strings.
func jsonDepth(s string) int {
	depth, maxDepth := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{':
			depth++
			maxDepth = max(maxDepth, depth)
		case ']', '}':
			depth--
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		}
	}
	return maxDepth
}
