package javascript

import (
	"math"
	"math/big"
	"reflect"
	"strconv"
	"time"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
)

// toGo converts a hook's result to the JSON shape in one pass, the way JSON.stringify
// would read it: plain objects → map[string]any (own enumerable string keys; a property
// holding undefined is left out), arrays → []any, numbers → int64 when integral and within
// 64 bits, float64 otherwise, strings, booleans, null → nil, Dates → their ISO string, boxed
// primitives → their value. Every value is charged to meter before its Go form is
// allocated, so an oversized result is refused part-way.
//
// A value with no JSON form is an *scripting.OutputError naming its path: a function, a
// symbol, undefined as an array element or as the result, NaN or ±Infinity, an integral
// number or BigInt beyond 64 bits, a Map, Set, RegExp or other exotic object, nesting deeper
// than scripting.MaxOutputDepth (as cyclic values are).
//
// Request views in the result are deep-copied from the engine's Go values without going
// through goja, unless shareViews: then their Go values are returned as they are (for stdlib
// arguments, which are read and never retained).
//
// Reading a property may run a getter; toGo must therefore run while the invocation's
// budgets are armed, and a getter's exception reaches the caller as a panic.
func toGo(v goja.Value, meter *scripting.OutputMeter) (any, error) {
	c := converter{meter: meter}
	return c.value(v, 0)
}

type converter struct {
	meter      *scripting.OutputMeter
	shareViews bool
}

func outErr(format string, args ...any) error {
	return scripting.NewOutputError(scripting.JavaScript, format, args...)
}

func tooDeep() error {
	return outErr("value nests deeper than %d levels (is it cyclic?)", scripting.MaxOutputDepth)
}

var (
	mapViewType  = reflect.TypeFor[*mapView]()
	listViewType = reflect.TypeFor[*listView]()
	// plainObjectType is what goja's ordinary objects export as.
	plainObjectType = reflect.TypeFor[map[string]any]()
)

// exoticName names an object that is not plain by its Symbol.toStringTag ("Map").
func exoticName(o *goja.Object) string {
	if t := o.GetSymbol(goja.SymToStringTag); t != nil {
		if s, ok := t.Export().(string); ok {
			return s
		}
	}
	return "an exotic object"
}

func (c *converter) value(v goja.Value, depth int) (any, error) {
	if o, ok := v.(*goja.Object); ok {
		return c.object(o, depth)
	}
	if v == nil || goja.IsUndefined(v) {
		return nil, outErr("undefined has no JSON form")
	}
	if s, ok := v.(*goja.Symbol); ok {
		return nil, outErr("symbol %s has no JSON form", s.String())
	}
	return c.primitive(v.Export())
}

// primitive converts the export of a primitive value.
func (c *converter) primitive(e any) (any, error) {
	switch x := e.(type) {
	case string:
		if err := c.meter.Add(scripting.OutputStringBytes + int64(len(x))); err != nil {
			return nil, err
		}
		return e, nil
	case int64, bool, nil:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		return e, nil
	case float64:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		return number(x)
	case *big.Int:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		if !x.IsInt64() {
			return nil, outErr("BigInt %s does not fit in 64 bits", x.String())
		}
		return x.Int64(), nil
	}
	return nil, outErr("expected a JSON value, got %T", e)
}

// number converts a float: integral values within int64 become int64, so that a count
// computed as 3.0 reaches Go as the integer 3.
func number(f float64) (any, error) {
	switch {
	case math.IsNaN(f):
		return nil, outErr("NaN has no JSON form")
	case math.IsInf(f, 0):
		return nil, outErr("%v has no JSON form", f)
	case f == math.Trunc(f):
		if f < -(1<<63) || f >= 1<<63 {
			return nil, outErr("integral number %v does not fit in 64 bits", f)
		}
		return int64(f), nil
	}
	return f, nil
}

func (c *converter) object(o *goja.Object, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, tooDeep()
	}
	switch o.ExportType() {
	case mapViewType:
		m := o.Export().(*mapView)
		if m.own == nil {
			return c.goValue(m.src, depth)
		}
		return c.ownMap(m, depth)
	case listViewType:
		l := o.Export().(*listView)
		if l.own == nil {
			return c.goValue(l.src, depth)
		}
		return c.list(l.own, depth)
	}
	switch cls := o.ClassName(); cls {
	case "Object":
		if o.ExportType() == plainObjectType {
			return c.plainObject(o, depth)
		}
		// Map, Set, Promise, Proxy and other exotic objects.
		return nil, outErr("got %s, which has no JSON form (convert it to an object or array first)", exoticName(o))
	case "Array":
		return c.array(o, depth)
	case "Function":
		return nil, outErr("got function, which has no JSON form")
	case "Date":
		t, ok := o.Export().(time.Time)
		if !ok {
			return nil, outErr("invalid Date has no JSON form")
		}
		return c.primitive(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	case "String", "Number", "Boolean", "BigInt":
		return c.primitive(o.Export())
	default:
		return nil, outErr("got %s, which has no JSON form (convert it to an object or array first)", cls)
	}
}

func (c *converter) plainObject(o *goja.Object, depth int) (any, error) {
	keys := o.Keys()
	if err := c.meter.Add(scripting.OutputMapBytes + scripting.OutputMapEntryBytes*int64(len(keys))); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		v := o.Get(k)
		if v == nil || goja.IsUndefined(v) {
			continue
		}
		g, err := c.value(v, depth+1)
		if err != nil {
			return nil, scripting.AtKey(err, k)
		}
		out[k] = g
	}
	return out, nil
}

func (c *converter) ownMap(m *mapView, depth int) (any, error) {
	if err := c.meter.Add(scripting.OutputMapBytes + scripting.OutputMapEntryBytes*int64(len(m.keys))); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m.keys))
	for _, k := range m.keys {
		v := m.own[k]
		if v == nil || goja.IsUndefined(v) {
			continue
		}
		g, err := c.value(v, depth+1)
		if err != nil {
			return nil, scripting.AtKey(err, k)
		}
		out[k] = g
	}
	return out, nil
}

func (c *converter) array(o *goja.Object, depth int) (any, error) {
	n := o.Get("length").ToInteger()
	if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*n); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range n {
		g, err := c.value(o.Get(indexKey(i)), depth+1)
		if err != nil {
			return nil, scripting.AtIndex(err, int(i))
		}
		out[i] = g
	}
	return out, nil
}

func (c *converter) list(vs []goja.Value, depth int) (any, error) {
	if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*int64(len(vs))); err != nil {
		return nil, err
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		g, err := c.value(v, depth+1)
		if err != nil {
			return nil, scripting.AtIndex(err, i)
		}
		out[i] = g
	}
	return out, nil
}

// indexKeys are the property names of the first array indexes, made once so that reading
// an array allocates no key strings.
var indexKeys = func() []string {
	ks := make([]string, 4096)
	for i := range ks {
		ks[i] = strconv.Itoa(i)
	}
	return ks
}()

func indexKey(i int64) string {
	if i < int64(len(indexKeys)) {
		return indexKeys[i]
	}
	return strconv.FormatInt(i, 10)
}

// goValue deep-copies a request value (or shares it), charging the meter.
func (c *converter) goValue(v any, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, tooDeep()
	}
	switch v := v.(type) {
	case map[string]any:
		if err := c.meter.Add(scripting.OutputMapBytes + scripting.OutputMapEntryBytes*int64(len(v))); err != nil {
			return nil, err
		}
		if c.shareViews {
			return v, nil
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			g, err := c.goValue(e, depth+1)
			if err != nil {
				return nil, scripting.AtKey(err, k)
			}
			out[k] = g
		}
		return out, nil
	case []any:
		if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*int64(len(v))); err != nil {
			return nil, err
		}
		if c.shareViews {
			return v, nil
		}
		out := make([]any, len(v))
		for i, e := range v {
			g, err := c.goValue(e, depth+1)
			if err != nil {
				return nil, scripting.AtIndex(err, i)
			}
			out[i] = g
		}
		return out, nil
	case string:
		if err := c.meter.Add(scripting.OutputStringBytes + int64(len(v))); err != nil {
			return nil, err
		}
		return v, nil
	}
	if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
		return nil, err
	}
	return v, nil
}
