package starlark

import (
	"reflect"

	"go.starlark.net/starlark"

	"metascript.dev/metascript/scripting/internal/cost"
)

// perTextElem is what one element of a string's or bytes' elems() or codepoints() costs once
// materialised: a new boxed one-character string (or int) and its list slot, with room for
// the list to grow.
const perTextElem = 48

// iterLen bounds the number of elements iterating v yields, and says what one costs once
// materialised: cost.Element for a sequence, which has a length, and perTextElem for the
// iterables of a string's or bytes' elements, which go.starlark.net gives no length
// (s.codepoints(), s.codepoint_ords(), b.elems()) and which yield up to one element per byte
// of what they iterate. It returns -1 for anything else.
func iterLen(v starlark.Value) (n int, per int64) {
	if n := starlark.Len(v); n >= 0 {
		if v.Type() == "string.elems" {
			return n, perTextElem
		}
		return n, cost.Element
	}
	switch v.Type() {
	case "string.codepoints", "bytes.elems":
		if n := textIterableLen(v); n >= 0 {
			return n, perTextElem
		}
	}
	return -1, cost.Element
}

// textIterableLen is the length of the string or bytes that go.starlark.net's iterable v
// (stringCodepoints, bytesIterable) iterates, read from its first field, or -1 if v is not
// laid out so.
func textIterableLen(v starlark.Value) int {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct || rv.Type().PkgPath() != "go.starlark.net/starlark" || rv.NumField() == 0 {
		return -1
	}
	if f := rv.Field(0); f.Kind() == reflect.String {
		return f.Len()
	}
	return -1
}
