package javascript

import (
	"math"
	"strconv"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
)

func init() { registerGuards("stringify", (*hardRuntime).installStringifyGuard) }

// MaxJSONStringifyDepth bounds the nesting of a value given to JSON.stringify.
const MaxJSONStringifyDepth = 1000

// JSON.stringify runs as Go code that neither the watchdog nor the timeout can interrupt, and
// it writes each reference to a value out in full: an array of a thousand references to one
// 1 MiB string becomes a 1 GiB string in one call, and a value nested a million levels deep
// holds a CPU for minutes (goja checks for cycles along the whole path at every level).
//
// The guard therefore always passes JSON.stringify a replacer function of its own, which
// goja calls before it writes each value. It
//   - stops the call at once if the invocation was stopped (timeout, memory, context);
//   - charges the bytes the value will add to the output (strings exactly, escapes included;
//     the key, punctuation and indentation) and reserves them from the memory budget in
//     scripting.SmallAlloc steps, and at once for a large string;
//   - refuses values nested deeper than MaxJSONStringifyDepth with a TypeError.
//
// The hook's own replacer keeps its meaning: a function is called first, as goja would; a
// property list is applied by handing goja, for each object, a plain object with only the
// listed properties, in list order (one copy per object, so cycles are still reported).
// One difference remains: a listed key that is an array index ("0", "1", ...) is written
// before the other listed keys, as in any plain object.
type stringifyMeter struct {
	cs      *callState
	fn      goja.Callable // the hook's replacer function, if any
	list    []string      // the hook's property list, if any
	copies  map[*goja.Object]*goja.Object
	gap     int64          // indentation per level
	holders []*goja.Object // the objects being written, outermost first
	pending int64          // bytes charged since the last reservation
}

func (h *hardRuntime) installStringifyGuard() {
	h.wrap(h.global.Get("JSON").(*goja.Object), "stringify", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		m := &stringifyMeter{cs: h.cur, gap: stringifyGap(c.Argument(2))}
		if r, ok := c.Argument(1).(*goja.Object); ok {
			if fn, ok := goja.AssertFunction(r); ok {
				m.fn = fn
			} else if r.ClassName() == "Array" {
				m.list = propertyList(r)
				m.copies = make(map[*goja.Object]*goja.Object)
			}
		}
		replacer := h.rt.ToValue(m.replace)
		return call(orig, c.This, c.Argument(0), replacer, c.Argument(2))
	})
}

// replace is the replacer goja calls with the holder as this, for every value it writes.
func (m *stringifyMeter) replace(c goja.FunctionCall) goja.Value {
	cs := m.cs
	if cs.watch.Reason() != scripting.NotStopped {
		panic(cs.rt.NewTypeError("JSON.stringify: the hook was stopped"))
	}
	key, v := c.Argument(0), c.Argument(1)
	if m.fn != nil {
		v = call(m.fn, c.This, key, v)
	}
	holder, _ := c.This.(*goja.Object)
	depth := m.enter(holder)
	if o, ok := v.(*goja.Object); ok {
		if m.list != nil && o.ClassName() != "Array" && o.ClassName() != "Function" && !isWrapper(o) {
			v = m.listed(o)
			o = v.(*goja.Object)
		}
		if depth >= MaxJSONStringifyDepth {
			panic(cs.rt.NewTypeError("JSON.stringify: value nests deeper than %d levels", MaxJSONStringifyDepth))
		}
		m.holders = append(m.holders, o)
	}
	m.charge(int64(len(key.String())) + 4 + m.gap*int64(depth+1) + valueBytes(v))
	return v
}

// enter pops the holders the writer has finished with and returns the depth of holder's
// properties (0 for the top-level value, whose holder is goja's own wrapper).
func (m *stringifyMeter) enter(holder *goja.Object) int {
	for i := len(m.holders) - 1; i >= 0; i-- {
		if m.holders[i] == holder {
			m.holders = m.holders[:i+1]
			return i
		}
	}
	m.holders = append(m.holders[:0], holder)
	return 0
}

// listed returns the copy of o that holds only the listed properties, made once per object.
func (m *stringifyMeter) listed(o *goja.Object) *goja.Object {
	if cp, ok := m.copies[o]; ok {
		return cp
	}
	cp := m.cs.rt.NewObject()
	m.copies[o] = cp
	for _, k := range m.list {
		if v := o.Get(k); v != nil && !goja.IsUndefined(v) {
			must(cp.Set(k, v))
		}
	}
	return cp
}

func (m *stringifyMeter) charge(n int64) {
	if n >= scripting.SmallAlloc {
		m.cs.reserve(m.pending + n)
		m.pending = 0
		return
	}
	m.pending += n
	if m.pending >= scripting.SmallAlloc {
		m.cs.reserve(m.pending)
		m.pending = 0
	}
}

// valueBytes is what v adds to the output besides its key: a string's escaped length, a
// number's longest form, brackets for an object (its properties are charged as written).
func valueBytes(v goja.Value) int64 {
	switch {
	case v == nil || goja.IsUndefined(v) || goja.IsNull(v):
		return 4
	case goja.IsString(v):
		return escapedLen(v.(goja.String))
	}
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "String" {
		if s, ok := o.Export().(string); ok {
			return 2 + 6*int64(len(s))
		}
	}
	return 24
}

// escapedLen is the length of s written as a JSON string: quotes, two bytes for the short
// escapes, six for other control characters, two for each byte beyond ASCII (goja writes
// such strings as UTF-16).
func escapedLen(s goja.String) int64 {
	n := int64(2)
	str := s.String()
	for i := 0; i < len(str); i++ {
		switch ch := str[i]; {
		case ch == '"' || ch == '\\' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '\b' || ch == '\f':
			n += 2
		case ch < 0x20:
			n += 6
		case ch >= 0x80:
			n += 2
		default:
			n++
		}
	}
	return n
}

func isWrapper(o *goja.Object) bool {
	switch o.ClassName() {
	case "String", "Number", "Boolean":
		return true
	}
	return false
}

// stringifyGap is the length of the indentation JSON.stringify makes of its space argument.
func stringifyGap(space goja.Value) int64 {
	if o, ok := space.(*goja.Object); ok && isWrapper(o) {
		switch x := o.Export().(type) {
		case string:
			return int64(min(len(x), 10))
		case int64, float64:
			space = o.ToNumber()
		}
	}
	if goja.IsString(space) {
		return int64(min(space.(goja.String).Length(), 10))
	}
	if goja.IsNumber(space) {
		f := space.ToFloat()
		if math.IsNaN(f) || f < 1 {
			return 0
		}
		return int64(min(f, 10))
	}
	return 0
}

// propertyList is the property list JSON.stringify makes of an array replacer: its string
// and number elements (and String and Number objects), as strings, without duplicates.
func propertyList(r *goja.Object) []string {
	l := toLength(r.Get("length"))
	var list []string
	seen := make(map[string]bool)
	for i := int64(0); i < l; i++ {
		v := r.Get(strconv.FormatInt(i, 10))
		o, isObj := v.(*goja.Object)
		if !goja.IsString(v) && !goja.IsNumber(v) && (!isObj || (o.ClassName() != "String" && o.ClassName() != "Number")) {
			continue
		}
		if k := v.String(); !seen[k] {
			seen[k] = true
			list = append(list, k)
		}
	}
	return list
}
