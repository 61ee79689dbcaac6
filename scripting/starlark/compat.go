package starlark

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The built-ins here are not guards: they keep go.starlark.net's semantics where request
// views and records (dicts to the hook, other Go types to go.starlark.net) would change
// them. Comparisons realise views and records first (go.starlark.net's dict and list
// comparisons assume both operands have the same Go type), sorted, min and max compare
// through a realising key, d |= m updates views and records in place as it does plain
// dicts, and list.append is called without binding the method.

// mayHoldView reports whether v is a container, which realise may have to rebuild.
func mayHoldView(v starlark.Value) bool {
	switch v.(type) {
	case *mapView, *listView, *record, *starlark.Dict, *starlark.List, starlark.Tuple:
		return true
	}
	return false
}

func opCompare(op syntax.Token) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		if mayHoldView(x) {
			x = realise(x)
		}
		if op == syntax.IN || op == syntax.NOT_IN {
			// A dict view answers `in` by lookup; realising it would copy it.
			if !isDict(y) && mayHoldView(y) {
				y = realise(y)
			}
			if err := checkMembership(t, x, y); err != nil {
				return nil, err
			}
			return starlark.Binary(op, x, y)
		}
		if mayHoldView(y) {
			y = realise(y)
		}
		if err := checkCompare(t, op, x, y); err != nil {
			return nil, err
		}
		ok, err := starlark.Compare(op, x, y)
		return starlark.Bool(ok), err
	}
}

func methodRealisingArgs(name string) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		rest := args[1:]
		for _, a := range rest {
			if mayHoldView(a) {
				cp := make(starlark.Tuple, len(rest))
				for i, a := range rest {
					cp[i] = realise(a)
				}
				rest = cp
				break
			}
		}
		if len(rest) > 0 {
			// list.index(x) and list.remove(x) compare x with the elements in turn.
			if err := checkMembership(t, rest[0], realise(args[0])); err != nil {
				return nil, err
			}
		}
		return callMethod(t, args[0], name, rest, kwargs)
	}
}

// realiseKey is the key function ordering gives sorted, min and max.
var realiseKey = starlark.NewBuiltin("key", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return realise(args[0]), nil
})

// ordering wraps sorted, min and max so that what they compare holds no request views or
// records, which go.starlark.net's list and dict comparisons cannot meet (see compareOps):
// elements that may hold them are compared through a key that realises them, and a key
// function's results are realised too. The elements returned are the originals.
func ordering(orig *starlark.Builtin) *starlark.Builtin {
	name := orig.Name()
	return starlark.NewBuiltin(name, func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		for i, kv := range kwargs {
			if k, ok := kv[0].(starlark.String); ok && k == "key" {
				userKey, ok := kv[1].(starlark.Callable)
				if !ok {
					break // None, or an error go.starlark.net reports
				}
				// What comparing the keys may visit is counted as they are made.
				n := 0
				if len(args) > 0 {
					n = max(starlark.Len(args[0]), 0)
				}
				per, left, visits := int64(bits.Len(uint(n))+1), stateOf(t).stepsLeft(), int64(0)
				cp := slices.Clone(kwargs)
				cp[i] = starlark.Tuple{kv[0], starlark.NewBuiltin("key", func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
					k, err := starlark.Call(t, userKey, args, nil)
					if err != nil || !mayHoldView(k) {
						return k, err
					}
					k = realise(k)
					if visits += per * compareSize(k, starlark.CompareLimit, left/per+1); visits > left {
						return nil, stateOf(t).refuseWork(name, visits)
					}
					return k, nil
				})}
				return orig.CallInternal(t, args, cp)
			}
		}
		if name == "sorted" && len(args) > 1 {
			// sorted(iterable, key, reverse) with positional arguments: left as it is.
			return orig.CallInternal(t, args, kwargs)
		}
		elems := args
		if len(args) == 1 {
			if seq, ok := args[0].(starlark.Indexable); ok {
				if err := checkOrdering(t, name, seq); err != nil {
					return nil, err
				}
				elems = nil
				for i := 0; i < seq.Len(); i++ {
					if mayHoldView(seq.Index(i)) {
						return orig.CallInternal(t, args, append(slices.Clone(kwargs), starlark.Tuple{starlark.String("key"), realiseKey}))
					}
				}
			}
		}
		if err := checkOrdering(t, name, elems); err != nil {
			return nil, err
		}
		for _, e := range elems {
			if mayHoldView(e) {
				return orig.CallInternal(t, args, append(slices.Clone(kwargs), starlark.Tuple{starlark.String("key"), realiseKey}))
			}
		}
		return orig.CallInternal(t, args, kwargs)
	})
}

// opPipeInPlace is d |= m: go.starlark.net updates a plain dict in place and makes a new
// value otherwise; records and request views are dicts to the hook, so they are updated in
// place too.
func opPipeInPlace(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if !isDict(x) || !isDict(y) {
		return starlark.Binary(syntax.PIPE, x, y)
	}
	var items []starlark.Tuple
	if x != y {
		items = y.(starlark.IterableMapping).Items()
	}
	if len(items) == 0 {
		// d |= d and d |= {} change nothing but still fail on a frozen dict.
		return x, pipeError(probeMutable(x))
	}
	for _, kv := range items {
		if err := x.(starlark.HasSetKey).SetKey(kv[0], kv[1]); err != nil {
			return nil, pipeError(err)
		}
	}
	return x, nil
}

// pipeError words a failed insertion as go.starlark.net words a failed |=.
func pipeError(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.Replace(err.Error(), "cannot insert into", "cannot apply |= to", 1)
	return errors.New(strings.Replace(msg, "cannot clear", "cannot apply |= to", 1))
}

// probeMutable returns the error a write to the dict x would meet (frozen, iterated),
// without changing it.
func probeMutable(x starlark.Value) error {
	switch v := x.(type) {
	case *record:
		if v.own == nil {
			return nil
		}
		x = v.own
	case *mapView:
		if v.own == nil {
			return nil
		}
		x = v.own
	}
	d := x.(*starlark.Dict)
	if d.Len() == 0 {
		return d.Clear()
	}
	k := d.Keys()[0]
	v, _, _ := d.Get(k)
	return d.SetKey(k, v) // the same value under the same key: no change
}

// isDict reports whether v is a dict to the hook.
func isDict(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.Dict, *record, *mapView:
		return true
	}
	return false
}

// methodAppend is list.append without binding the method to its receiver first, which
// allocates; it is not a guard (append adds one element), only the commonest method call.
func methodAppend(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv, rest := args[0], args[1:]
	var l *starlark.List
	switch r := recv.(type) {
	case *starlark.List:
		l = r
	case *listView:
		l = r.private()
	}
	if l == nil || len(rest) != 1 || len(kwargs) != 0 {
		return callMethod(t, recv, "append", rest, kwargs)
	}
	if err := l.Append(rest[0]); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	return starlark.None, nil
}
