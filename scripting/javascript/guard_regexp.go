package javascript

import (
	"strings"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
)

// Global matching. For `s.match(re)` with a global RegExp, goja finds every match in one Go
// call before it builds the result, allocating some 250 bytes per match with no interrupt
// check: "x".repeat(4 << 20).match(/x/g) allocated 974 MiB in 2 s under a 32 MiB budget.
// When the input is long enough for that to pass the budget the call has left, the guard
// runs the specification's own loop instead (RegExp.prototype[Symbol.match]: exec until it
// fails, advancing past empty matches) in script code, where the watchdog and the timeout
// stop it like any loop. Shorter inputs keep goja's single call.

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
	limit := cs.watch.Limit()
	if limit <= 0 || n < scripting.SmallAlloc {
		return false
	}
	return n > (limit-cs.watch.Used())/2
}

func (h *hardRuntime) installRegExpGuards() {
	rt := h.rt
	loopValue, err := rt.RunProgram(matchAllProgram)
	must(err)
	loop, _ := goja.AssertFunction(loopValue)
	proto := h.global.Get("RegExp").(*goja.Object).Get("prototype").(*goja.Object)
	orig, ok := goja.AssertFunction(proto.GetSymbol(goja.SymMatch))
	if !ok {
		return
	}
	fn := rt.ToValue(func(c goja.FunctionCall) goja.Value {
		rx, isObj := c.This.(*goja.Object)
		if !isObj {
			return call(orig, c.This, c.Arguments...)
		}
		s, ok := toJSString(rt, c.Argument(0))
		if !ok {
			return call(orig, c.This, c.Arguments...)
		}
		if n := int64(s.Length()); n < int64(matchLoopFrom) && !h.cur.mayPass(n*bytesPerMatchChar) {
			return call(orig, rx, s)
		}
		flags := rx.Get("flags").String()
		if !strings.Contains(flags, "g") {
			return call(orig, rx, s)
		}
		unicode := strings.ContainsAny(flags, "uv")
		return call(loop, goja.Undefined(), rx, s, rt.ToValue(unicode))
	}).(*goja.Object)
	must(fn.DefineDataProperty("name", rt.ToValue("[Symbol.match]"), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	must(fn.DefineDataProperty("length", rt.ToValue(1), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE))
	must(proto.DefineDataPropertySymbol(goja.SymMatch, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE))
}
