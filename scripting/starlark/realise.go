package starlark

import (
	"go.starlark.net/starlark"
)

// realise returns v with every request view and record in it replaced by ordinary Starlark
// values, so that go.starlark.net's own comparisons, which assume both operands have the
// same Go type, never meet one. Values without them are returned as they are. Shared and
// cyclic values stay shared and cyclic in the result, and each container is visited once,
// so a value built by doubling (z = [z, z]) costs its size, not its paths; nesting deeper
// than maxValueDepth is left as it is.
func realise(v starlark.Value) starlark.Value {
	if !mayHoldView(v) {
		return v
	}
	r := realiser{clean: map[any]bool{}, done: map[any]starlark.Value{}}
	if r.isClean(v, 0) {
		return v
	}
	return r.value(v, 0)
}

const maxValueDepth = 256

type realiser struct {
	clean map[any]bool           // whether containers hold no view or record; false while checked
	done  map[any]starlark.Value // containers realised, or being realised
}

// identity is the map key of a container: its pointer, or a tuple's first element's.
func identity(v starlark.Value) any {
	if t, ok := v.(starlark.Tuple); ok {
		return &t[0]
	}
	return v
}

// isClean reports whether v holds no view or record. A container met again while it is
// being checked (a cycle) counts as not clean, so every container on a cycle is copied:
// sound, and a cycle's containers are copied once each.
func (r *realiser) isClean(v starlark.Value, depth int) bool {
	if depth > maxValueDepth {
		return true
	}
	switch x := v.(type) {
	case *mapView, *listView, *record:
		return false
	case *starlark.Dict, *starlark.List, starlark.Tuple:
		if t, ok := x.(starlark.Tuple); ok && len(t) == 0 {
			return true
		}
		id := identity(x)
		if c, ok := r.clean[id]; ok {
			return c
		}
		r.clean[id] = false
		c := true
		switch x := x.(type) {
		case *starlark.Dict:
			for _, e := range x.Entries() {
				if c = r.isClean(e, depth+1); !c {
					break
				}
			}
		case *starlark.List:
			for i := 0; i < x.Len() && c; i++ {
				c = r.isClean(x.Index(i), depth+1)
			}
		case starlark.Tuple:
			for i := 0; i < len(x) && c; i++ {
				c = r.isClean(x[i], depth+1)
			}
		}
		r.clean[id] = c
		return c
	}
	return true
}

// value returns v realised; the new container is recorded before it is filled, so a cycle
// back to v meets the copy.
func (r *realiser) value(v starlark.Value, depth int) starlark.Value {
	if depth > maxValueDepth || r.isClean(v, depth) {
		return v
	}
	id := identity(v)
	if d, ok := r.done[id]; ok {
		return d
	}
	switch x := v.(type) {
	case *mapView:
		if x.own != nil {
			return r.value(x.own, depth)
		}
		if !x.touched() {
			d := fromGo(x.src)
			r.done[id] = d
			return d
		}
		keys, vals := x.entries()
		return r.dict(id, keys, vals, depth)
	case *record:
		if x.own != nil {
			return r.value(x.own, depth)
		}
		return r.dict(id, x.keys, x.vals, depth)
	case *starlark.Dict:
		d := starlark.NewDict(x.Len())
		r.done[id] = d
		for k, e := range x.Entries() {
			d.SetKey(k, r.value(e, depth+1))
		}
		return d
	case *listView:
		if x.own != nil {
			return r.value(x.own, depth)
		}
		if !x.touched() {
			l := fromGo(x.src)
			r.done[id] = l
			return l
		}
		return r.list(id, len(x.src), x.Index, depth)
	case *starlark.List:
		return r.list(id, x.Len(), x.Index, depth)
	case starlark.Tuple:
		t := make(starlark.Tuple, len(x))
		r.done[id] = t
		for i, e := range x {
			t[i] = r.value(e, depth+1)
		}
		return t
	}
	return v
}

func (r *realiser) dict(id any, keys, vals []starlark.Value, depth int) starlark.Value {
	d := starlark.NewDict(len(keys))
	r.done[id] = d
	for i, k := range keys {
		d.SetKey(k, r.value(vals[i], depth+1))
	}
	return d
}

func (r *realiser) list(id any, n int, index func(int) starlark.Value, depth int) starlark.Value {
	l := starlark.NewList(make([]starlark.Value, 0, n))
	r.done[id] = l
	for i := range n {
		l.Append(r.value(index(i), depth+1))
	}
	return l
}
