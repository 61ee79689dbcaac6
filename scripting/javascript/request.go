package javascript

import (
	"math"
	"slices"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// The request reaches the hook as lazy copy-on-write views over the engine's values: a map
// becomes an objectView and a slice an arrayView, both goja dynamic objects with the
// ordinary Object and Array prototypes, so property access, Object.keys, for-in, spread,
// JSON.stringify and the Array methods behave as on plain objects and arrays. A value is
// converted when first read and cached, so that `request.parent === request.parent` and a
// change made through one path is seen through every other.
//
// Writes (assignment, delete, push, sort, changing length) go to the view's overlay and
// never to the engine's maps and slices: a hook may tweak its request the way webhook code
// often does, and the change is visible to that call only. Object keys are enumerated in
// sorted order (Go maps have none), followed by keys the hook added, in insertion order.

// newRequest returns the request view, or null for a nil request.
func (cs *callState) newRequest(m map[string]any) goja.Value {
	if m == nil {
		return goja.Null()
	}
	return cs.rt.NewDynamicObject(&objectView{cs: cs, src: m})
}

// toJS converts one request value. Maps and slices become views; leaves become goja
// primitives.
func (cs *callState) toJS(x any) goja.Value {
	switch x := x.(type) {
	case nil:
		return goja.Null()
	case string:
		return cs.rt.ToValue(x)
	case bool:
		return cs.rt.ToValue(x)
	case int64:
		return cs.rt.ToValue(x)
	case float64:
		return cs.rt.ToValue(x)
	case map[string]any:
		return cs.rt.NewDynamicObject(&objectView{cs: cs, src: x})
	case []any:
		return cs.rt.NewDynamicArray(&arrayView{cs: cs, src: x, length: len(x), srcLen: len(x)})
	}
	if n, ok := normaliseLeaf(x); ok {
		return cs.toJS(n)
	}
	if g, err := copyJSON(nil, x, 0); err == nil {
		// Typed containers ([]string, map[string]string, ...) are copied once into the
		// JSON shape, then viewed like any other value.
		return cs.toJS(g)
	}
	panic(cs.rt.NewTypeError("request holds a value of unsupported type %T", x))
}

// objectView is a copy-on-write view of one map.
type objectView struct {
	cs  *callState
	src map[string]any // never written
	// vals holds converted values of src (a cache) and values the hook wrote.
	vals map[string]goja.Value
	// gone marks keys of src the hook deleted (or deleted and wrote again: then the key is
	// also in added, and its value in vals).
	gone map[string]bool
	// added lists keys not in src, or re-added after deletion, in insertion order.
	added []string
	// sorted holds src's keys, sorted, made on the first Keys.
	sorted  []string
	written bool
}

func (v *objectView) Get(key string) goja.Value {
	if val, ok := v.vals[key]; ok {
		return val
	}
	if v.gone[key] {
		return nil
	}
	x, ok := v.src[key]
	if !ok {
		return nil
	}
	val := v.cs.toJS(x)
	if v.vals == nil {
		v.vals = make(map[string]goja.Value, 4)
	}
	v.vals[key] = val
	return val
}

func (v *objectView) Set(key string, val goja.Value) bool {
	if v.vals == nil {
		v.vals = make(map[string]goja.Value, 4)
	}
	if _, inSrc := v.src[key]; !inSrc || v.gone[key] {
		if _, known := v.vals[key]; !known {
			v.added = append(v.added, key)
		}
	}
	v.vals[key] = val
	v.written = true
	return true
}

func (v *objectView) Has(key string) bool {
	if _, ok := v.vals[key]; ok {
		return true
	}
	_, ok := v.src[key]
	return ok && !v.gone[key]
}

func (v *objectView) Delete(key string) bool {
	v.written = true
	delete(v.vals, key)
	if i := slices.Index(v.added, key); i >= 0 {
		v.added = slices.Delete(v.added, i, i+1)
	}
	if _, ok := v.src[key]; ok {
		if v.gone == nil {
			v.gone = make(map[string]bool)
		}
		v.gone[key] = true
	}
	return true
}

func (v *objectView) Keys() []string {
	if v.sorted == nil {
		v.sorted = make([]string, 0, len(v.src))
		for k := range v.src {
			v.sorted = append(v.sorted, k)
		}
		slices.Sort(v.sorted)
	}
	if v.gone == nil && v.added == nil {
		// goja only reads the slice.
		return v.sorted
	}
	keys := make([]string, 0, len(v.sorted)+len(v.added))
	for _, k := range v.sorted {
		if !v.gone[k] {
			keys = append(keys, k)
		}
	}
	return append(keys, v.added...)
}

// toGo converts the view back for a result: untouched values are copied from src, values
// read or written through the view are converted from JavaScript.
func (v *objectView) toGo(c *converter, depth int) (any, error) {
	if v.vals == nil && !v.written {
		if c.shareViews {
			return v.src, nil
		}
		return copyJSON(&c.meter, v.src, depth)
	}
	size := int64(scripting.OutputMapBytes + (len(v.src)+len(v.added))*scripting.OutputMapEntryBytes)
	if err := c.meter.Add(size); err != nil {
		return nil, err
	}
	m := make(map[string]any, len(v.src)+len(v.added))
	convertKey := func(k string) error {
		var g any
		var err error
		if val, ok := v.vals[k]; ok {
			if val == nil || goja.IsUndefined(val) {
				return nil
			}
			g, err = c.value(val, depth+1)
		} else {
			g, err = copyJSON(&c.meter, v.src[k], depth+1)
		}
		if err != nil {
			return scripting.AtKey(err, k)
		}
		m[k] = g
		return nil
	}
	for k := range v.src {
		if !v.gone[k] {
			if err := convertKey(k); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range v.added {
		if err := convertKey(k); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// arrayView is a copy-on-write view of one slice.
type arrayView struct {
	cs  *callState
	src []any // never written
	// vals, once made, has one entry per element: a converted or written value, or nil for
	// an element below srcLen not converted yet.
	vals   []goja.Value
	length int
	// srcLen is how many leading elements may still come from src: shrinking the array
	// lowers it, so that growing it again yields undefined, not the old elements.
	srcLen  int
	written bool
}

func (a *arrayView) Len() int { return a.length }

func (a *arrayView) Get(i int) goja.Value {
	if i < 0 || i >= a.length {
		return nil
	}
	if a.vals != nil && a.vals[i] != nil {
		return a.vals[i]
	}
	if i >= a.srcLen {
		return goja.Undefined()
	}
	val := a.cs.toJS(a.src[i])
	a.materialise()
	a.vals[i] = val
	return val
}

func (a *arrayView) materialise() {
	if a.vals == nil {
		a.vals = make([]goja.Value, a.length)
	}
}

func (a *arrayView) Set(i int, val goja.Value) bool {
	if i < 0 {
		return false
	}
	if i >= a.length && !a.SetLen(i+1) {
		return false
	}
	a.materialise()
	a.vals[i] = val
	a.written = true
	return true
}

func (a *arrayView) SetLen(n int) bool {
	if n < 0 {
		return false
	}
	if n > a.length {
		a.cs.reserve(int64(n-a.length) * cost.Element)
	}
	a.written = true
	a.materialise()
	a.srcLen = min(a.srcLen, n, a.length)
	if n <= a.length {
		clear(a.vals[n:])
		a.vals = a.vals[:n]
	} else {
		a.vals = append(a.vals, make([]goja.Value, n-a.length)...)
	}
	a.length = n
	return true
}

func (a *arrayView) toGo(c *converter, depth int) (any, error) {
	if a.vals == nil && !a.written {
		if c.shareViews {
			return a.src, nil
		}
		return copyJSON(&c.meter, a.src, depth)
	}
	if err := c.meter.Add(scripting.OutputListBytes + int64(a.length)*scripting.OutputListEntryBytes); err != nil {
		return nil, err
	}
	l := make([]any, a.length)
	for i := range a.length {
		var g any
		var err error
		switch val := a.vals[i]; {
		case val != nil && !goja.IsUndefined(val):
			g, err = c.value(val, depth+1)
		case val == nil && i < a.srcLen:
			g, err = copyJSON(&c.meter, a.src[i], depth+1)
		default:
			err = scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got undefined (use null)")
		}
		if err != nil {
			return nil, scripting.AtIndex(err, i)
		}
		l[i] = g
	}
	return l, nil
}

// copyJSON deep-copies a request value into the JSON shape, charging meter (if not nil).
func copyJSON(meter *scripting.OutputMeter, x any, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, scripting.NewOutputError(scripting.JavaScript, "value nests deeper than %d levels", scripting.MaxOutputDepth)
	}
	add := func(n int64) error {
		if meter == nil {
			return nil
		}
		return meter.Add(n)
	}
	switch x := x.(type) {
	case map[string]any:
		size := int64(scripting.OutputMapBytes + len(x)*scripting.OutputMapEntryBytes)
		for k := range x {
			size += int64(len(k))
		}
		if err := add(size); err != nil {
			return nil, err
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			g, err := copyJSON(meter, e, depth+1)
			if err != nil {
				return nil, scripting.AtKey(err, k)
			}
			m[k] = g
		}
		return m, nil
	case []any:
		if err := add(scripting.OutputListBytes + int64(len(x))*scripting.OutputListEntryBytes); err != nil {
			return nil, err
		}
		l := make([]any, len(x))
		for i, e := range x {
			g, err := copyJSON(meter, e, depth+1)
			if err != nil {
				return nil, scripting.AtIndex(err, i)
			}
			l[i] = g
		}
		return l, nil
	case string:
		return x, add(scripting.OutputStringBytes + int64(len(x)))
	case nil, bool, int64:
		return x, add(scripting.OutputScalarBytes)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON number, got %v", x)
		}
		return x, add(scripting.OutputScalarBytes)
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return copyJSON(meter, l, depth)
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return copyJSON(meter, m, depth)
	}
	if n, ok := normaliseLeaf(x); ok {
		return copyJSON(meter, n, depth)
	}
	return nil, scripting.NewOutputError(scripting.JavaScript, "request holds a value of unsupported type %T", x)
}

// normaliseLeaf maps Go number types other than int64 and float64 to those two.
func normaliseLeaf(x any) (any, bool) {
	switch x := x.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint32:
		return int64(x), true
	case float32:
		return float64(x), true
	}
	return nil, false
}
