package starlark

import (
	"unsafe"

	"go.starlark.net/starlark"
)

// Boxing a string in an interface allocates a string header on the heap, and conversion
// between the request, Starlark and the result would do it for every string twice. A
// starlark.String in a starlark.Value and a string in an any both point at such a header
// (starlark.String's underlying type is string), and strings are immutable, so the header
// can be shared: these functions re-type the interface and keep its data pointer. A check
// at init falls back to ordinary conversion if the layout is ever not what they assume.

type ifaceWords struct{ tab, data unsafe.Pointer }

var (
	sampleAny      any            = "x"
	sampleValue    starlark.Value = starlark.String("x")
	anyStringType                 = (*ifaceWords)(unsafe.Pointer(&sampleAny)).tab
	valueStringTab                = (*ifaceWords)(unsafe.Pointer(&sampleValue)).tab
	shareHeaders                  = boxingWorks()
)

func boxingWorks() bool {
	s := "boxing check " + string(rune('a'+len(sampleAny.(string))))
	var v starlark.Value = starlark.String(s)
	g := rebox(v)
	back := unbox(g)
	gs, ok1 := g.(string)
	bs, ok2 := back.(starlark.String)
	return ok1 && ok2 && gs == s && string(bs) == s
}

func rebox(v starlark.Value) any {
	var out any
	w := (*ifaceWords)(unsafe.Pointer(&out))
	w.data = (*ifaceWords)(unsafe.Pointer(&v)).data
	w.tab = anyStringType
	return out
}

func unbox(g any) starlark.Value {
	var out starlark.Value
	w := (*ifaceWords)(unsafe.Pointer(&out))
	w.data = (*ifaceWords)(unsafe.Pointer(&g)).data
	w.tab = valueStringTab
	return out
}

// stringToGo returns the Go string in v, a starlark.String, as an any without allocating.
func stringToGo(v starlark.Value) any {
	if shareHeaders {
		return rebox(v)
	}
	return string(v.(starlark.String))
}

// stringFromGo returns g, an any holding a string, as a starlark.String without allocating.
func stringFromGo(g any) starlark.Value {
	if shareHeaders {
		return unbox(g)
	}
	return starlark.String(g.(string))
}

// stringValueAt returns *p as a starlark.String whose header is *p itself, without
// allocating; *p must never change afterwards.
func stringValueAt(p *string) starlark.Value {
	if !shareHeaders {
		return starlark.String(*p)
	}
	var out starlark.Value
	w := (*ifaceWords)(unsafe.Pointer(&out))
	w.data = unsafe.Pointer(p)
	w.tab = valueStringTab
	return out
}
