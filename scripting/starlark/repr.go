package starlark

import (
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// writeRepr writes x as go.starlark.net prints it, for records and request views, whose
// String go.starlark.net calls without the path of containers it is printing: a record or
// view inside its own entries would otherwise print itself until the stack overflows. Every
// container on the way is handled here, with the path, so a cycle prints as {...} or [...]
// as it does for plain dicts and lists.
func writeRepr(out *strings.Builder, x starlark.Value, path []starlark.Value) {
	switch x := x.(type) {
	case starlark.String:
		out.WriteString(syntax.Quote(string(x), false))
	case starlark.Tuple:
		out.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				out.WriteString(", ")
			}
			writeRepr(out, e, path)
		}
		if len(x) == 1 {
			out.WriteByte(',')
		}
		out.WriteByte(')')
	case *starlark.List:
		writeList(out, x, x.Len(), x.Index, path)
	case *listView:
		switch {
		case x.own != nil:
			writeList(out, x, x.own.Len(), x.own.Index, path)
		case x.touched():
			writeList(out, x, len(x.src), x.Index, path)
		default:
			writeGo(out, x.src, 0)
		}
	case *starlark.Dict:
		writeDict(out, x, x.Entries(), path)
	case *record:
		if x.own != nil {
			writeDict(out, x, x.own.Entries(), path)
			return
		}
		writeDict(out, x, func(yield func(k, v starlark.Value) bool) {
			for i, k := range x.keys {
				if !yield(k, x.vals[i]) {
					return
				}
			}
		}, path)
	case *mapView:
		switch {
		case x.own != nil:
			writeDict(out, x, x.own.Entries(), path)
		case x.touched():
			keys, vals := x.entries()
			writeDict(out, x, func(yield func(k, v starlark.Value) bool) {
				for i, k := range keys {
					if !yield(k, vals[i]) {
						return
					}
				}
			}, path)
		default:
			writeGo(out, x.src, 0)
		}
	default:
		out.WriteString(x.String())
	}
}

func writeList(out *strings.Builder, x starlark.Value, n int, index func(int) starlark.Value, path []starlark.Value) {
	out.WriteByte('[')
	if slices.Contains(path, x) {
		out.WriteString("...") // the list contains itself
	} else {
		for i := range n {
			if i > 0 {
				out.WriteString(", ")
			}
			writeRepr(out, index(i), append(path, x))
		}
	}
	out.WriteByte(']')
}

func writeDict(out *strings.Builder, x starlark.Value, entries func(yield func(k, v starlark.Value) bool), path []starlark.Value) {
	out.WriteByte('{')
	if slices.Contains(path, x) {
		out.WriteString("...") // the dict contains itself
	} else {
		sep := ""
		for k, v := range entries {
			out.WriteString(sep)
			writeRepr(out, k, path)
			out.WriteString(": ")
			writeRepr(out, v, append(path, x))
			sep = ", "
		}
	}
	out.WriteByte('}')
}

// repr is x's text through writeRepr.
func repr(x starlark.Value) string {
	var b strings.Builder
	writeRepr(&b, x, nil)
	return b.String()
}
