package javascript

import (
	"math"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// String.prototype.split makes a string for each piece, and a piece costs far more than the
// character it may come from (cost.SplitPiece). The guard splits with the limit the budget
// affords and refuses the split if it reaches that limit; a split by a RegExp, whose matches
// goja finds all before it applies any limit, is charged bytesPerRegexpSplitChar per input
// character first. Strings shorter than scripting.SmallAlloc/cost.SplitPiece split unchecked.

func init() { registerGuards("split", (*hardRuntime).installSplitGuard) }

// bytesPerRegexpSplitChar bounds what a split by a RegExp costs per character of its input:
// goja finds every match before it applies the limit, allocating per match.
const bytesPerRegexpSplitChar = 256

func (h *hardRuntime) installSplitGuard() {
	stringProto := h.prototype("String")
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
