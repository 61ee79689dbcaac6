package starlark

import (
	"strings"

	"go.starlark.net/starlark"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// methodSplitting checks str.split, str.rsplit and str.splitlines: the number of pieces,
// counted (or bounded, for whitespace) before the string is split, times cost.SplitPiece. A
// string shorter than scripting.SmallAlloc/cost.SplitPiece is split unchecked.
func methodSplitting(name string) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		recv, rest := args[0], args[1:]
		if s, ok := recv.(starlark.String); ok && int64(len(s))*cost.SplitPiece >= scripting.SmallAlloc {
			if err := stateOf(t).reserve(cost.Mul(pieces(name, string(s), rest), cost.SplitPiece)); err != nil {
				return nil, err
			}
		}
		return callMethod(t, recv, name, rest, kwargs)
	}
}

// pieces bounds the number of pieces s splits into.
func pieces(name, s string, args starlark.Tuple) int64 {
	if name == "splitlines" {
		return int64(strings.Count(s, "\n")+strings.Count(s, "\r")) + 1
	}
	sep, ok := starlark.String(""), false
	if len(args) > 0 {
		sep, ok = args[0].(starlark.String)
	}
	n := int64(len(s)/2) + 1 // fields separated by whitespace
	if ok && sep != "" {
		n = int64(strings.Count(s, string(sep))) + 1
	}
	if len(args) > 1 {
		if m, ok := args[1].(starlark.Int); ok {
			if m64, ok := m.Int64(); ok && m64 >= 0 && m64+1 < n {
				n = m64 + 1
			}
		}
	}
	return n
}
