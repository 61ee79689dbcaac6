package javascript

import (
	"math"
	"math/big"
	"reflect"
	"strconv"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
)

// converter turns a hook's result into the JSON shape: objects become map[string]any,
// arrays []any, strings string, booleans bool, integral numbers that fit int64 (and BigInts
// that fit) int64, other finite numbers float64, null nil.
//
// It follows JSON.stringify where that is well defined: only own string-keyed properties are
// converted (enumerable or not; see plainObject), properties whose value is undefined are left out, Date objects
// become their toJSON() string, and String, Number and Boolean wrapper objects are unwrapped.
// Everything JSON.stringify would silently change or drop is an *scripting.OutputError
// naming its path: undefined in an array, functions, symbols, NaN and ±Infinity, BigInts
// beyond int64, cycles, other built-in objects (Map, Set, RegExp, Error, Promise, ...), and
// nesting deeper than scripting.MaxOutputDepth. Output size and value count are charged to
// the budget before each value is built.
//
// Getters and proxy traps run while converting, under the invocation's budgets. A shared
// object (the same labels object in many children) is converted once per occurrence: the
// result shares no map or slice with itself, the request or the Runtime.
type converter struct {
	cs    *callState
	rt    *goja.Runtime
	meter scripting.OutputMeter
	// shareViews passes request views the hook did not touch as the engine's own values
	// instead of copies, for stdlib arguments, which are neither retained nor mutated.
	shareViews bool
	// ancestors are the objects being converted, outermost first: one seen again is a cycle.
	ancestors []*goja.Object
}

func newConverter(cs *callState) *converter {
	return &converter{cs: cs, rt: cs.rt, meter: scripting.NewOutputMeter(scripting.JavaScript, cs.budget()),
		ancestors: make([]*goja.Object, 0, 16)}
}

// convert converts v. Exceptions thrown by getters and proxy traps are returned as
// *goja.Exception; interrupts propagate as panics to callState.run.
func (c *converter) convert(v goja.Value) (out any, err error) {
	if ex := c.rt.Try(func() { out, err = c.value(v, 0) }); ex != nil {
		return nil, ex
	}
	return out, err
}

var (
	plainObjectType = reflect.TypeFor[map[string]any]()
	objectViewType  = reflect.TypeFor[*objectView]()
	arrayViewType   = reflect.TypeFor[*arrayView]()
)

func (c *converter) value(v goja.Value, depth int) (any, error) {
	if o, ok := v.(*goja.Object); ok {
		return c.object(o, depth)
	}
	if v == nil || goja.IsUndefined(v) {
		return nil, c.meter.Add(scripting.OutputScalarBytes)
	}
	if _, ok := v.(*goja.Symbol); ok {
		return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got a symbol")
	}
	return c.primitive(v.Export())
}

// primitive converts an exported primitive. It returns x itself where it can: boxing its
// value again would allocate.
func (c *converter) primitive(x any) (any, error) {
	switch v := x.(type) {
	case string:
		return x, c.meter.Add(scripting.OutputStringBytes + int64(len(v)))
	case int64, bool, nil:
		return x, c.meter.Add(scripting.OutputScalarBytes)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON number, got %v", v)
		}
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		if v == math.Trunc(v) && v >= -(1<<63) && v < 1<<63 {
			return int64(v), nil
		}
		return x, nil
	case *big.Int:
		if !v.IsInt64() {
			return nil, scripting.NewOutputError(scripting.JavaScript, "BigInt %s does not fit in 64 bits", v)
		}
		return v.Int64(), c.meter.Add(scripting.OutputScalarBytes)
	}
	return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got %T", x)
}

func (c *converter) object(o *goja.Object, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, scripting.NewOutputError(scripting.JavaScript, "value nests deeper than %d levels", scripting.MaxOutputDepth)
	}
	for _, a := range c.ancestors {
		if a == o {
			return nil, scripting.NewOutputError(scripting.JavaScript, "cyclic value: an object contains itself")
		}
	}
	c.ancestors = append(c.ancestors, o)
	v, err := c.objectValue(o, depth)
	c.ancestors = c.ancestors[:len(c.ancestors)-1]
	return v, err
}

func (c *converter) objectValue(o *goja.Object, depth int) (any, error) {
	exportType := o.ExportType()
	switch exportType {
	case objectViewType:
		return o.Export().(*objectView).toGo(c, depth)
	case arrayViewType:
		return o.Export().(*arrayView).toGo(c, depth)
	}
	switch o.ClassName() {
	case "Object":
		if exportType != plainObjectType {
			// Map, Set, WeakMap, Promise, ...: objects of class Object with internal state.
			return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got a %s object", tagOf(o))
		}
		return c.plainObject(o, depth)
	case "Array":
		return c.array(o, depth)
	case "Function":
		return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got a function")
	case "Date":
		toJSON, ok := goja.AssertFunction(o.Get("toJSON"))
		if !ok {
			return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got a Date without toJSON")
		}
		v, err := toJSON(o)
		if err != nil {
			panic(err)
		}
		return c.value(v, depth+1)
	case "String", "Number", "Boolean":
		return c.primitive(o.Export())
	}
	return nil, scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got a %s object", o.ClassName())
}

// plainObject converts an object's own string-keyed properties. goja's Keys, which filters
// enumerable ones, costs twice GetOwnPropertyNames; properties made non-enumerable with
// Object.defineProperty are therefore converted too, unlike in JSON.stringify.
func (c *converter) plainObject(o *goja.Object, depth int) (any, error) {
	keys := o.GetOwnPropertyNames()
	size := int64(scripting.OutputMapBytes + len(keys)*scripting.OutputMapEntryBytes)
	for _, k := range keys {
		size += int64(len(k))
	}
	if err := c.meter.Add(size); err != nil {
		return nil, err
	}
	m := make(map[string]any, len(keys))
	for _, k := range keys {
		fv := o.Get(k)
		if fv == nil || goja.IsUndefined(fv) {
			continue
		}
		g, err := c.value(fv, depth+1)
		if err != nil {
			return nil, scripting.AtKey(err, k)
		}
		m[k] = g
	}
	return m, nil
}

func (c *converter) array(o *goja.Object, depth int) (any, error) {
	n := o.Get("length").ToInteger()
	if err := c.meter.Add(scripting.OutputListBytes + n*scripting.OutputListEntryBytes); err != nil {
		return nil, err
	}
	l := make([]any, n)
	for i := range l {
		ev := o.Get(strconv.Itoa(i))
		if ev == nil || goja.IsUndefined(ev) {
			return nil, scripting.AtIndex(scripting.NewOutputError(scripting.JavaScript, "expected a JSON value, got undefined (use null)"), i)
		}
		g, err := c.value(ev, depth+1)
		if err != nil {
			return nil, scripting.AtIndex(err, i)
		}
		l[i] = g
	}
	return l, nil
}

// tagOf names an object's kind by its Symbol.toStringTag, as Object.prototype.toString does.
func tagOf(o *goja.Object) string {
	if t := o.GetSymbol(goja.SymToStringTag); t != nil && goja.IsString(t) {
		return t.String()
	}
	return "non-plain"
}
