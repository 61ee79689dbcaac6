package starlark

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// A record is the dict a dict display with a few distinct string-literal keys evaluates to
// ({"apiVersion": "v1", "kind": k, ...}, see rewrite.go): its keys are a tuple shared by
// every evaluation of the display and its values the argument tuple of the call that made
// it, so making one allocates a fraction of a starlark.Dict and converting it to Go hashes
// nothing on the Starlark side.
//
// To the hook it is a dict. Lookups, assignments and len work on the record itself; any
// other use (iteration, methods, printing, freezing, deletion, more than recordMax keys, a
// non-string key) first turns it into a private *starlark.Dict with the same entries in the
// same order (own) and delegates to it from then on, so dict semantics are go.starlark.net's
// own. A record that was frozen has been turned, so shared records are never written.
type record struct {
	keys      starlark.Tuple // starlark.String; shared with the display until keysOwned
	vals      []starlark.Value
	keysOwned bool
	own       *starlark.Dict
}

// recordMax is the largest display made a record; lookups search the keys in order.
const recordMax = 8

var (
	_ starlark.IterableMapping = (*record)(nil)
	_ starlark.HasSetKey       = (*record)(nil)
	_ starlark.HasAttrs        = (*record)(nil)
	_ starlark.Comparable      = (*record)(nil)
	_ starlark.HasBinary       = (*record)(nil)
	_ starlark.Sequence        = (*record)(nil)
)

// makeRecord is the built-in a dict display is rewritten into: args are the display's keys
// (a frozen tuple of distinct strings) and then its values. The interpreter hands a
// built-in a fresh copy of its arguments, so the values are kept without copying.
func makeRecord(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return &record{keys: args[0].(starlark.Tuple), vals: args[1:]}, nil
}

// recordOf returns a record of the entries keys and vals, copied into one array with room
// for two more (a copy is usually made to add to it).
func recordOf(keys, vals []starlark.Value) *record {
	n := len(keys)
	c := min(n+2, recordMax)
	buf := make([]starlark.Value, 2*c)
	r := &record{keys: buf[:n:c], vals: buf[c : c+n], keysOwned: true}
	copy(r.keys, keys)
	copy(r.vals, vals)
	return r
}

// dict turns the record into its private dict, once.
func (r *record) dict() *starlark.Dict {
	if r.own == nil {
		d := starlark.NewDict(len(r.keys))
		for i, k := range r.keys {
			d.SetKey(k, r.vals[i])
		}
		r.own, r.keys, r.vals = d, nil, nil
	}
	return r.own
}

func (r *record) String() string        { return repr(r) }
func (r *record) Type() string          { return "dict" }
func (r *record) Freeze()               { r.dict().Freeze() }
func (r *record) Truth() starlark.Bool  { return r.Len() > 0 }
func (r *record) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: dict") }

func (r *record) Len() int {
	if r.own != nil {
		return r.own.Len()
	}
	return len(r.keys)
}

func (r *record) index(k string) int {
	for i, rk := range r.keys {
		if string(rk.(starlark.String)) == k {
			return i
		}
	}
	return -1
}

func (r *record) Get(k starlark.Value) (starlark.Value, bool, error) {
	if r.own != nil {
		return r.own.Get(k)
	}
	ks, ok := k.(starlark.String)
	if !ok {
		if _, err := k.Hash(); err != nil {
			return nil, false, err
		}
		return nil, false, nil
	}
	if i := r.index(string(ks)); i >= 0 {
		return r.vals[i], true, nil
	}
	return nil, false, nil
}

func (r *record) SetKey(k, v starlark.Value) error {
	if r.own == nil {
		if ks, ok := k.(starlark.String); ok {
			if i := r.index(string(ks)); i >= 0 {
				r.vals[i] = v
				return nil
			}
			if len(r.keys) < recordMax {
				if !r.keysOwned {
					r.keys = append(make(starlark.Tuple, 0, recordMax), r.keys...)
					r.keysOwned = true
				}
				r.keys = append(r.keys, k)
				r.vals = append(r.vals, v)
				return nil
			}
		}
	}
	return r.dict().SetKey(k, v)
}

func (r *record) Iterate() starlark.Iterator { return r.dict().Iterate() }

func (r *record) Items() []starlark.Tuple {
	if r.own != nil {
		return r.own.Items()
	}
	items := make([]starlark.Tuple, len(r.keys))
	pairs := make([]starlark.Value, 2*len(r.keys))
	for i, k := range r.keys {
		pair := pairs[2*i : 2*i+2 : 2*i+2]
		pair[0], pair[1] = k, r.vals[i]
		items[i] = pair
	}
	return items
}

func (r *record) Attr(name string) (starlark.Value, error) { return r.dict().Attr(name) }
func (r *record) AttrNames() []string                      { return starlark.NewDict(0).AttrNames() }

func (r *record) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return starlark.CompareDepth(op, realise(r), realise(y), depth)
}

func (r *record) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	if side == starlark.Left {
		return starlark.Binary(op, realise(r), realise(y))
	}
	return starlark.Binary(op, realise(y), realise(r))
}
