package starlark

import (
	"fmt"
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

// maxReprDepth bounds the nesting of a value rendered as text (str, repr, print, fail, %
// and format refuse deeper ones): go.starlark.net renders recursively and, for lists and
// dicts, searches the path of enclosing containers at every level, so a value nested a
// million levels deep would hold the CPU for hours in one call and grow the Go stack by
// hundreds of megabytes.
const maxReprDepth = 1000

// errReprTooDeep is reprSize's error for a value nested deeper than maxReprDepth.
var errReprTooDeep = fmt.Errorf("value nests more than %d levels deep", maxReprDepth)

// reprSize estimates the length of v's text form, stopping once it passes limit. Aliased
// values are counted each time they appear, as the text repeats them; a container met
// again inside itself counts as the {...} or [...] it prints as. A value nested deeper than
// maxReprDepth is errReprTooDeep.
func reprSize(v starlark.Value, limit int64) (int64, error) {
	if n, leaf := leafReprSize(v); leaf && limit >= 0 {
		return n, nil // as the sizer counts it, without making one: % formats mostly these
	}
	s := reprSizer{limit: limit}
	s.add(v)
	if s.deep {
		return 0, errReprTooDeep
	}
	return s.total, nil
}

// leafReprSize is reprSize of a value that holds no others; leaf is false for one that may.
func leafReprSize(v starlark.Value) (n int64, leaf bool) {
	switch v := v.(type) {
	case starlark.String:
		return int64(len(v)) + 2, true
	case starlark.Bytes:
		return 4*int64(len(v)) + 3, true
	case starlark.Int:
		if _, ok := v.Int64(); ok {
			return 20, true
		}
		return int64(v.BigInt().BitLen())/3 + 2, true
	case starlark.Tuple, *starlark.List, *starlark.Dict, *record, *mapView, *listView:
		return 0, false
	}
	return 32, true
}

type reprSizer struct {
	limit, total int64
	path         []starlark.Value // lists and dicts being measured, outermost first
	depth        int              // containers being measured, tuples included
	deep         bool             // nested deeper than maxReprDepth
}

func (s *reprSizer) add(v starlark.Value) {
	if s.total > s.limit || s.deep {
		return
	}
	if n, leaf := leafReprSize(v); leaf {
		s.total += n
		return
	}
	if s.depth >= maxReprDepth {
		s.deep = true
		return
	}
	s.depth++
	defer func() { s.depth-- }()
	if t, ok := v.(starlark.Tuple); ok {
		s.total += 2
		for i := 0; i < len(t) && s.total <= s.limit; i++ {
			s.total += 2
			s.add(t[i])
		}
		return
	}
	if slices.Contains(s.path, v) {
		s.total += 8 // printed as {...} or [...]
		return
	}
	s.path = append(s.path, v)
	defer func() { s.path = s.path[:len(s.path)-1] }()
	switch v := v.(type) {
	case *starlark.List:
		s.list(v.Len(), v.Index)
	case *starlark.Dict:
		s.dict(v.Entries())
	case *record:
		if v.own != nil {
			s.dict(v.own.Entries())
			return
		}
		s.pairs(v.keys, v.vals)
	case *mapView:
		switch {
		case v.own != nil:
			s.dict(v.own.Entries())
		case v.touched():
			s.pairs(v.entries())
		default:
			s.total += goReprSize(v.src, s.limit-s.total, 0)
		}
	case *listView:
		switch {
		case v.own != nil:
			s.list(v.own.Len(), v.own.Index)
		case v.touched():
			s.list(len(v.src), v.Index)
		default:
			s.total += goReprSize(v.src, s.limit-s.total, 0)
		}
	}
}

func (s *reprSizer) list(n int, index func(int) starlark.Value) {
	s.total += 2
	for i := 0; i < n && s.total <= s.limit; i++ {
		s.total += 2
		s.add(index(i))
	}
}

func (s *reprSizer) dict(entries func(yield func(k, v starlark.Value) bool)) {
	s.total += 2
	for k, e := range entries {
		if s.total > s.limit {
			break
		}
		s.total += 4
		s.add(k)
		s.add(e)
	}
}

func (s *reprSizer) pairs(keys, vals []starlark.Value) {
	s.total += 2
	for i := 0; i < len(keys) && s.total <= s.limit; i++ {
		s.total += 4
		s.add(keys[i])
		s.add(vals[i])
	}
}

// goReprSize estimates the text of a request value, as reprSize does.
func goReprSize(v any, limit int64, depth int) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v)) + 2
	case map[string]any:
		n := int64(2)
		for k, e := range v {
			n += int64(len(k)) + 6 + goReprSize(e, limit-n, depth+1)
			if n > limit {
				break
			}
		}
		return n
	case []any:
		n := int64(2)
		for _, e := range v {
			n += 2 + goReprSize(e, limit-n, depth+1)
			if n > limit {
				break
			}
		}
		return n
	}
	return 24
}

// writeGo writes v as Starlark would print the equivalent value.
func writeGo(b *strings.Builder, v any, depth int) {
	if depth > maxValueDepth {
		b.WriteString("...")
		return
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(starlark.String(k).String())
			b.WriteString(": ")
			writeGo(b, v[k], depth+1)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeGo(b, e, depth+1)
		}
		b.WriteByte(']')
	default:
		b.WriteString(scalar(v).String())
	}
}
