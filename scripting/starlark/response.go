package starlark

import (
	"math"

	"go.starlark.net/starlark"

	"metascript.dev/metascript/scripting"
)

// toGo converts a hook's result to the JSON shape in one pass: dict → map[string]any,
// list and tuple → []any, int → int64, float → float64, string, bool, None → nil. Every
// value is charged to meter before its Go form is allocated, so an oversized result is
// refused part-way. A value with no JSON form (function, set, NaN, an int beyond 64 bits, a
// non-string dict key, nesting deeper than scripting.MaxOutputDepth, as cyclic values are)
// is an *scripting.OutputError naming its path.
//
// Request views in the result are deep-copied from the engine's Go values without going
// through Starlark, unless shareViews: then their Go values are returned as they are (for
// stdlib arguments, which are read and never retained). A view the hook left untouched and
// placed in the result more than once (a parent's selector labels in every child) is copied
// once, and that copy is shared by every place it appears, as the one dict is in the hook;
// it is charged to meter at every place, as separate copies would be.
func toGo(v starlark.Value, meter *scripting.OutputMeter) (any, error) {
	c := converter{meter: meter}
	return c.value(v, 0)
}

type converter struct {
	meter      *scripting.OutputMeter
	shareViews bool
	copies     []viewCopy // the untouched views copied, for the next time they appear; few

	// State of the dict loop body (entry).
	yield func(k, e starlark.Value) bool
	out   map[string]any
	depth int
	err   error
}

func outErr(format string, args ...any) error {
	return scripting.NewOutputError(scripting.Starlark, format, args...)
}

func (c *converter) value(v starlark.Value, depth int) (any, error) {
	switch x := v.(type) {
	case starlark.String:
		if err := c.meter.Add(scripting.OutputStringBytes + int64(len(x))); err != nil {
			return nil, err
		}
		return stringToGo(v), nil
	}
	switch v := v.(type) {
	case starlark.Int:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		i, ok := v.Int64()
		if !ok {
			return nil, outErr("integer %s does not fit in 64 bits", v.String())
		}
		return i, nil
	case starlark.Bool:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		return bool(v), nil
	case starlark.NoneType:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		return nil, nil
	case starlark.Float:
		if err := c.meter.Add(scripting.OutputScalarBytes); err != nil {
			return nil, err
		}
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, outErr("%s has no JSON form", v.String())
		}
		return f, nil
	case *starlark.Dict:
		return c.dict(v, depth)
	case *starlark.List:
		if depth >= scripting.MaxOutputDepth {
			return nil, tooDeep()
		}
		n := v.Len()
		if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*int64(n)); err != nil {
			return nil, err
		}
		out := make([]any, n)
		for i := range n {
			e, err := c.value(v.Index(i), depth+1)
			if err != nil {
				return nil, scripting.AtIndex(err, i)
			}
			out[i] = e
		}
		return out, nil
	case starlark.Tuple:
		if depth >= scripting.MaxOutputDepth {
			return nil, tooDeep()
		}
		if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*int64(len(v))); err != nil {
			return nil, err
		}
		out := make([]any, len(v))
		for i, e := range v {
			g, err := c.value(e, depth+1)
			if err != nil {
				return nil, scripting.AtIndex(err, i)
			}
			out[i] = g
		}
		return out, nil
	case *record:
		if v.own != nil {
			return c.dict(v.own, depth)
		}
		return c.record(v, depth)
	case *mapView:
		if v.own != nil {
			return c.dict(v.own, depth)
		}
		if v.touched() {
			return c.touchedMap(v, depth)
		}
		return c.untouched(v, v.src, depth)
	case *listView:
		if v.own != nil {
			return c.value(v.own, depth)
		}
		if v.touched() {
			return c.touchedList(v, depth)
		}
		return c.untouched(v, v.src, depth)
	}
	return nil, outErr("expected a JSON value (dict, list, string, int, float, bool or None), got %s", v.Type())
}

func tooDeep() error {
	return outErr("value nests deeper than %d levels (is it cyclic?)", scripting.MaxOutputDepth)
}

func (c *converter) dict(d *starlark.Dict, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, tooDeep()
	}
	n := d.Len()
	if err := c.meter.Add(scripting.OutputMapBytes + scripting.OutputMapEntryBytes*int64(n)); err != nil {
		return nil, err
	}
	out := make(map[string]any, n)
	// Entries with a loop body bound once per conversion (c.entry) iterates without hashing
	// keys again and without a closure per dict; the body's state is saved around nesting.
	if c.yield == nil {
		c.yield = c.entry
	}
	saveOut, saveDepth := c.out, c.depth
	c.out, c.depth, c.err = out, depth+1, nil
	d.Entries()(c.yield)
	c.out, c.depth = saveOut, saveDepth
	if c.err != nil {
		return nil, c.err
	}
	return out, nil
}

func (c *converter) record(r *record, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, tooDeep()
	}
	if err := c.meter.Add(scripting.OutputMapBytes + scripting.OutputMapEntryBytes*int64(len(r.keys))); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(r.keys))
	for i, k := range r.keys {
		g, err := c.value(r.vals[i], depth+1)
		if err != nil {
			return nil, scripting.AtKey(err, string(k.(starlark.String)))
		}
		out[string(k.(starlark.String))] = g
	}
	return out, nil
}

// entry is the loop body of dict: it converts one entry into c.out, or sets c.err and stops.
func (c *converter) entry(k, e starlark.Value) bool {
	ks, ok := k.(starlark.String)
	if !ok {
		c.err = outErr("dict key %s is a %s, not a string", k.String(), k.Type())
		return false
	}
	out, depth := c.out, c.depth
	g, err := c.value(e, depth)
	if err != nil {
		c.err = scripting.AtKey(err, string(ks))
		return false
	}
	out[string(ks)] = g
	return true
}

// touchedMap converts a view whose child views the hook has read, and may have changed,
// from those children and, for the rest, from the source.
func (c *converter) touchedMap(v *mapView, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, tooDeep()
	}
	if err := c.meter.Add(scripting.OutputMapBytes + scripting.OutputMapEntryBytes*int64(len(v.src))); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(v.src))
	for k, g := range v.src {
		var e any
		var err error
		if kid, ok := v.kids.get(k); ok {
			e, err = c.value(kid, depth+1)
		} else {
			e, err = c.goValue(g, depth+1)
		}
		if err != nil {
			return nil, scripting.AtKey(err, k)
		}
		out[k] = e
	}
	return out, nil
}

// touchedList is touchedMap for lists.
func (c *converter) touchedList(v *listView, depth int) (any, error) {
	if depth >= scripting.MaxOutputDepth {
		return nil, tooDeep()
	}
	if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*int64(len(v.src))); err != nil {
		return nil, err
	}
	out := make([]any, len(v.src))
	for i, g := range v.src {
		var e any
		var err error
		if kid := v.kids[i]; kid != nil {
			e, err = c.value(kid, depth+1)
		} else {
			e, err = c.goValue(g, depth+1)
		}
		if err != nil {
			return nil, scripting.AtIndex(err, i)
		}
		out[i] = e
	}
	return out, nil
}

// viewCopy is the Go value an untouched view was converted to.
type viewCopy struct {
	view starlark.Value
	out  any
}

// untouched converts view, an untouched view of src: its first time a copy of src
// (goValue), remembered for the next times, which are charged as copies but share it.
func (c *converter) untouched(view starlark.Value, src any, depth int) (any, error) {
	if c.shareViews {
		return c.goValue(src, depth)
	}
	for _, vc := range c.copies {
		if vc.view == view {
			if err := c.charge(src, depth); err != nil {
				return nil, err
			}
			return vc.out, nil
		}
	}
	out, err := c.goValue(src, depth)
	if err == nil && len(c.copies) < maxViewCopies {
		if c.copies == nil {
			c.copies = make([]viewCopy, 0, 2) // most results place one or two
		}
		c.copies = append(c.copies, viewCopy{view, out})
	}
	return out, err
}

// maxViewCopies bounds the views a conversion remembers, and so its search for each.
const maxViewCopies = 8

// goValue deep-copies a request value (or shares it), charging the meter.
func (c *converter) goValue(v any, depth int) (any, error) {
	return c.copyValue(v, depth, true)
}

// charge charges the meter for v as goValue does, with its checks, without copying it.
func (c *converter) charge(v any, depth int) error {
	_, err := c.copyValue(v, depth, false)
	return err
}

// copyValue is goValue, or charge when copies is false.
func (c *converter) copyValue(v any, depth int, copies bool) (any, error) {
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
		var out map[string]any
		if copies {
			out = make(map[string]any, len(v))
		}
		for k, e := range v {
			g, err := c.copyValue(e, depth+1, copies)
			if err != nil {
				return nil, scripting.AtKey(err, k)
			}
			if copies {
				out[k] = g
			}
		}
		return out, nil
	case []any:
		if err := c.meter.Add(scripting.OutputListBytes + scripting.OutputListEntryBytes*int64(len(v))); err != nil {
			return nil, err
		}
		if c.shareViews {
			return v, nil
		}
		var out []any
		if copies {
			out = make([]any, len(v))
		}
		for i, e := range v {
			g, err := c.copyValue(e, depth+1, copies)
			if err != nil {
				return nil, scripting.AtIndex(err, i)
			}
			if copies {
				out[i] = g
			}
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
