package javascript

import (
	"math"
	"strconv"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting/internal/cost"
)

// String built-ins whose result, or the copies goja makes on the way to it, are a large
// multiple of their input. Each guard reserves, before the built-in runs:
//
//	repeat                             count × length
//	padStart, padEnd                   the target length
//	replace, replaceAll                with a string replacement: matches × replacement
//	concat                             the joined length
//	toUpperCase, toLowerCase, escape,  the copies goja makes, per input character
//	encodeURI(Component)
//	String.raw                         its segments and substitutions
//
// goja case-maps and escapes through Go strings (UTF-16 to UTF-8 and back) and string
// builders that double as they grow; the factors below are what the process allocated per
// input byte, measured:
//
//	toUpperCase/toLowerCase of non-ASCII text   37 ("ß"), 42 ("ﬃ"), 53 ("İ") bytes per character
//	escape, encodeURI(Component)                 7 to 8 per ASCII byte, 17 to 32 per other character
//	String.raw                                   each segment and substitution, written as it is
//	                                             read: 1000 references to a 1 MiB string made
//	                                             5 GiB in 3.7 s

func init() {
	registerGuards("string", func(h *hardRuntime) {
		h.guardStringSizes()
		h.guardStringCopies()
	})
}

// What the copying guards reserve per unit of their input.
const (
	caseBytesPerChar   = 64 // non-ASCII; ASCII maps to ASCII in one copy
	escapeBytesPerByte = 8  // ASCII
	escapeBytesPerChar = 32 // non-ASCII
)

// guardStringSizes guards the built-ins whose result's size follows from their arguments.
func (h *hardRuntime) guardStringSizes() {
	rt := h.rt
	stringProto := h.prototype("String")
	h.wrap(stringProto, "repeat", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
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
	h.wrap(stringProto, "padStart", pad)
	h.wrap(stringProto, "padEnd", pad)

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
	h.wrap(stringProto, "replace", replace)
	h.wrap(stringProto, "replaceAll", replace)

	h.wrap(stringProto, "concat", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
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
}

// guardStringCopies guards the built-ins that copy their input several times over.
func (h *hardRuntime) guardStringCopies() {
	stringProto := h.prototype("String")
	caseMap := func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if _, ok := thisString(c.This); !ok {
			return call(orig, c.This, c.Arguments...)
		}
		s, ok := toJSString(h.rt, c.This)
		if !ok {
			return call(orig, c.This, c.Arguments...)
		}
		h.cur.reserve(expansion(s, 1, caseBytesPerChar))
		return call(orig, s, c.Arguments...)
	}
	for _, name := range []string{"toUpperCase", "toLowerCase", "toLocaleUpperCase", "toLocaleLowerCase"} {
		h.wrap(stringProto, name, caseMap)
	}
	escape := func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := toJSString(h.rt, c.Argument(0))
		if !ok {
			return call(orig, c.This, c.Arguments...)
		}
		h.cur.reserve(expansion(s, escapeBytesPerByte, escapeBytesPerChar))
		return call(orig, c.This, s)
	}
	for _, name := range []string{"escape", "encodeURI", "encodeURIComponent"} {
		h.wrap(h.global, name, escape)
	}

	h.wrap(h.global.Get("String").(*goja.Object), "raw", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if cooked, ok := c.Argument(0).(*goja.Object); ok {
			if raw, ok := cooked.Get("raw").(*goja.Object); ok {
				cs := h.cur
				l := toLength(raw.Get("length"))
				cs.checkLoop(l)
				total := int64(0)
				for i := int64(0); i < l; i++ {
					total += rawBytes(raw.Get(strconv.FormatInt(i, 10)))
					if i+1 < l && i+1 < int64(len(c.Arguments)) {
						total += rawBytes(c.Arguments[i+1])
					}
				}
				cs.reserve(cost.Mul(total, 2)) // the builder doubles as it grows
			}
		}
		return call(orig, c.This, c.Arguments...)
	})
}

// expansion is what a built-in that expands each character of s costs: perByte for an
// ASCII string, perChar for each UTF-16 unit of another.
func expansion(s goja.String, perByte, perChar int64) int64 {
	if stringBytes(s) == int64(s.Length()) {
		return cost.Mul(int64(s.Length()), perByte)
	}
	return cost.Mul(int64(s.Length()), perChar)
}

// rawBytes is what String.raw writes for v: a string's bytes, a small constant for another
// value (its conversion may run script code, which the watchdog can interrupt).
func rawBytes(v goja.Value) int64 {
	if s, ok := v.(goja.String); ok {
		return stringBytes(s)
	}
	return 24
}
