package javascript

import (
	"strconv"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting/internal/cost"
)

// String built-ins whose result, or the copies goja makes on the way to it, are a large
// multiple of their input. goja case-maps and escapes through Go strings (UTF-16 to UTF-8
// and back) and string builders that double as they grow; the factors below are what the
// process allocated per input byte, measured:
//
//	toUpperCase/toLowerCase of non-ASCII text   37 ("ß"), 42 ("ﬃ"), 53 ("İ") bytes per character
//	escape, encodeURI(Component)                 7 to 8 per ASCII byte, 17 to 32 per other character
//	String.raw                                   each segment and substitution, written as it is
//	                                             read: 1000 references to a 1 MiB string made
//	                                             5 GiB in 3.7 s
//
// Each guard reserves its factor times the input before the built-in runs.
const (
	caseBytesPerChar   = 64 // non-ASCII; ASCII maps to ASCII in one copy
	escapeBytesPerByte = 8  // ASCII
	escapeBytesPerChar = 32 // non-ASCII
)

func (h *hardRuntime) installStringGuards(stringProto *goja.Object) {
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
