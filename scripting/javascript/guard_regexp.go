package javascript

import (
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// Regular expressions. Compiling a pattern costs bytesPerPatternChar a character: RegExp(p),
// new RegExp(p), and match, matchAll and search of a string, which compile a string
// argument, reserve it (guardedRegExp).
//
// Regular expressions that need backtracking (backreferences, lookaround) run on regexp2,
// whose matching cannot be interrupted: its timeout is set to RegexpTimeout, after which the
// match fails (no match), so a catastrophic pattern holds a CPU for at most that long per
// match call.
//
// Global matching. For `s.match(re)` and `s.replace(re, r)` with a global RegExp, goja finds
// every match in one Go call before it uses one, allocating some 250 bytes per match with no
// interrupt check: "x".repeat(4 << 20).match(/x/g) allocated 974 MiB in 2 s under a 32 MiB
// budget, and replace with a function 846 MiB. When the input is long enough for that to
// pass half the budget the call has left, the guard has the specification's own loop run
// instead (exec until it fails, advancing past empty matches), one exec call at a time from
// script code, where the watchdog and the timeout stop it like any loop. Shorter inputs keep
// goja's single call.

func init() {
	// Process-wide: regexp2 is used only by goja here.
	regexp2.DefaultMatchTimeout = RegexpTimeout
	registerGuards("regexp", func(h *hardRuntime) {
		h.installRegExpGuards()
		h.regexp = h.guardedRegExp(h.global.Get("RegExp").(*goja.Object), h.prototype("String"))
	})
}

// RegexpTimeout bounds one backtracking regular-expression match.
const RegexpTimeout = 250 * time.Millisecond

// bytesPerMatchChar bounds what goja's global match allocates per character of its input.
const bytesPerMatchChar = 256

var matchAllProgram = goja.MustCompile("<match>", `(function (rx, S, fullUnicode) {
  rx.lastIndex = 0;
  var A = [];
  for (;;) {
    var r = rx.exec(S);
    if (r === null) return A.length === 0 ? null : A;
    var m = String(r[0]);
    A.push(m);
    if (m === "") {
      var i = rx.lastIndex, c = S.charCodeAt(i);
      rx.lastIndex = i + (fullUnicode && c >= 0xD800 && c <= 0xDBFF && i + 1 < S.length &&
        S.charCodeAt(i + 1) >= 0xDC00 && S.charCodeAt(i + 1) <= 0xDFFF ? 2 : 1);
    }
  }
})`, true)

// matchLoopFrom is the input length from which the loop is used whatever the budget left;
// tests lower it to run the loop on small inputs.
var matchLoopFrom = 1 << 30

// mayPass reports whether allocating n bytes may take the call past half the memory budget
// it has left. Below scripting.SmallAlloc it does not sample the heap.
func (cs *callState) mayPass(n int64) bool {
	limit := cs.watch.Memory().Limit()
	if limit <= 0 || n < scripting.SmallAlloc {
		return false
	}
	return n > (limit-cs.watch.Memory().Used())/2
}

// execThroughScript makes a stand-in for a global RegExp whose exec is a script function
// calling the RegExp's own: goja then takes its generic path, the specification's, which
// calls exec once per match, and each call is a point where the watchdog and the timeout
// stop the hook. lastIndex and flags are the RegExp's.
var execThroughScript = goja.MustCompile("<replace>", `(function (rx) {
  return Object.create(Object.getPrototypeOf(rx), {
    exec: {value: function (s) { var e = rx.exec; return e.call(rx, s); }},
    lastIndex: {get: function () { return rx.lastIndex; }, set: function (v) { rx.lastIndex = v; }},
    flags: {get: function () { return rx.flags; }},
  });
})`, true)

// installRegExpGuards makes RegExp.prototype[Symbol.match] and [Symbol.replace] with a global
// RegExp interruptible on inputs long enough to pass half the budget left: match runs
// matchAllProgram, replace runs goja's generic path on an execThroughScript stand-in.
func (h *hardRuntime) installRegExpGuards() {
	rt := h.rt
	script := func(p *goja.Program) goja.Callable {
		v, err := rt.RunProgram(p)
		must(err)
		fn, _ := goja.AssertFunction(v)
		return fn
	}
	matchLoop, standIn := script(matchAllProgram), script(execThroughScript)
	proto := h.global.Get("RegExp").(*goja.Object).Get("prototype").(*goja.Object)
	// long returns the RegExp, the input and its flags when the call must be interruptible.
	long := func(c goja.FunctionCall) (*goja.Object, goja.String, string, bool) {
		// String.prototype.match and replace pass a string; anything else goes to the
		// built-in, which converts it once.
		rx, isObj := c.This.(*goja.Object)
		s, ok := c.Argument(0).(goja.String)
		if !isObj || !ok {
			return nil, nil, "", false
		}
		if n := int64(s.Length()); n < int64(matchLoopFrom) && !h.cur.mayPass(n*bytesPerMatchChar) {
			return nil, nil, "", false
		}
		flags := rx.Get("flags").String()
		return rx, s, flags, strings.Contains(flags, "g")
	}
	h.wrapSymbol(proto, goja.SymMatch, "[Symbol.match]", 1, func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if rx, s, flags, ok := long(c); ok {
			return call(matchLoop, goja.Undefined(), rx, s, rt.ToValue(strings.ContainsAny(flags, "uv")))
		}
		return call(orig, c.This, c.Arguments...)
	})
	h.wrapSymbol(proto, goja.SymReplace, "[Symbol.replace]", 2, func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		if rx, s, _, ok := long(c); ok {
			return call(orig, call(standIn, goja.Undefined(), rx), s, c.Argument(1))
		}
		return call(orig, c.This, c.Arguments...)
	})
}

// bytesPerPatternChar bounds what compiling a RegExp costs per character of its pattern:
// goja's translation and either engine's compiled program (a 16 MiB pattern took 494 MiB).
const bytesPerPatternChar = 32

// guardedRegExp returns the RegExp constructor's proxy that reserves what compiling a pattern
// costs, and wraps String.prototype.match, matchAll and search, which compile a string
// argument into a RegExp of their own. A pattern given as an object other than a RegExp is
// converted by the built-in (its toString runs once) and not checked.
func (h *hardRuntime) guardedRegExp(ctor, stringProto *goja.Object) *goja.Object {
	reserve := func(pattern goja.Value) {
		n := int64(0)
		switch p := pattern.(type) {
		case goja.String:
			n = int64(p.Length())
		case *goja.Object:
			if p.ClassName() == "RegExp" {
				if src, ok := p.Get("source").(goja.String); ok {
					n = int64(src.Length())
				}
			}
		}
		if n > 0 {
			h.cur.reserve(cost.Mul(n, bytesPerPatternChar))
		}
	}
	for _, name := range []string{"match", "matchAll", "search"} {
		h.wrap(stringProto, name, func(orig goja.Callable, c goja.FunctionCall) goja.Value {
			if p, ok := c.Argument(0).(goja.String); ok {
				reserve(p)
			}
			return call(orig, c.This, c.Arguments...)
		})
	}
	return h.guardedConstructor(ctor, func(args []goja.Value) {
		if len(args) > 0 {
			reserve(args[0])
		}
	})
}
