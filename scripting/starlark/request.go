package starlark

import (
	"fmt"
	"slices"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The request reaches a hook as lazy views over the engine's map[string]any / []any: a
// mapView is a dict and a listView a list to the hook, and a leaf is converted only when the
// hook reads it. A container read twice is the same view (cached in kids), so the hook sees
// one consistent object graph.
//
// Copy-on-write: the engine's maps are never written. The first mutation of a view (d[k] =
// v, d.pop, l.append, ...) gives that view a private Starlark copy of its own level (own),
// whose nested containers are still views, and applies the mutation there. A hook therefore
// behaves as if it owned a deep copy of its request, as a webhook did, and nothing outside
// its call changes.

type mapView struct {
	src  map[string]any
	kids kids
	own  *starlark.Dict
	keys []starlark.Value // sorted keys as Starlark strings, made once on first iteration
	vals []starlark.Value // values in the order of keys, made once on first copy
}

// kids caches the child views of a mapView: a short list searched in order, as most
// levels of an object have only a few nested containers, and a map once there are more.
type kids struct {
	list []kid
	m    map[string]starlark.Value
}

type kid struct {
	key string
	val starlark.Value
}

const kidListMax = 8

func (ks *kids) get(k string) (starlark.Value, bool) {
	if ks.m != nil {
		v, ok := ks.m[k]
		return v, ok
	}
	for i := range ks.list {
		if ks.list[i].key == k {
			return ks.list[i].val, true
		}
	}
	return nil, false
}

func (ks *kids) put(k string, v starlark.Value) {
	switch {
	case ks.m != nil:
		ks.m[k] = v
	case len(ks.list) < kidListMax:
		if ks.list == nil {
			ks.list = make([]kid, 0, 2) // a hook mostly reads one or two containers of a level
		}
		ks.list = append(ks.list, kid{k, v})
	default:
		ks.m = make(map[string]starlark.Value, 2*kidListMax)
		for _, e := range ks.list {
			ks.m[e.key] = e.val
		}
		ks.m[k] = v
		ks.list = nil
	}
}

type listView struct {
	src  []any
	kids []starlark.Value
	own  *starlark.List
}

var (
	_ starlark.IterableMapping = (*mapView)(nil)
	_ starlark.HasSetKey       = (*mapView)(nil)
	_ starlark.HasAttrs        = (*mapView)(nil)
	_ starlark.Comparable      = (*mapView)(nil)
	_ starlark.HasBinary       = (*mapView)(nil)
	_ starlark.Sequence        = (*mapView)(nil)
	_ starlark.Indexable       = (*listView)(nil)
	_ starlark.Sliceable       = (*listView)(nil)
	_ starlark.HasSetIndex     = (*listView)(nil)
	_ starlark.HasAttrs        = (*listView)(nil)
	_ starlark.Comparable      = (*listView)(nil)
	_ starlark.HasBinary       = (*listView)(nil)
)

func newMapView(m map[string]any) *mapView { return &mapView{src: m} }

// leaf converts a Go value of the request to Starlark; containers become views.
func leaf(v any) starlark.Value {
	switch x := v.(type) {
	case string:
		return stringFromGo(v)
	case map[string]any:
		return &mapView{src: x}
	case []any:
		return &listView{src: x}
	}
	return scalar(v)
}

// scalar converts a JSON-shaped leaf; anything else becomes its fmt text, which never
// happens for objects coming from the API server.
func scalar(v any) starlark.Value {
	switch v := v.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(v)
	case string:
		return starlark.String(v)
	case int64:
		return starlark.MakeInt64(v)
	case int:
		return starlark.MakeInt(v)
	case int32:
		return starlark.MakeInt64(int64(v))
	case float64:
		return starlark.Float(v)
	case float32:
		return starlark.Float(v)
	}
	return starlark.String(fmt.Sprint(v))
}

// ---- mapView ----

// touched reports whether the hook has read a nested container of the view: that child
// view may have been changed since, so the view's source alone no longer says what it holds.
func (v *mapView) touched() bool { return len(v.kids.list) > 0 || v.kids.m != nil }

// touched: see mapView.touched.
func (v *listView) touched() bool { return v.kids != nil }

func (v *mapView) String() string        { return repr(v) }
func (v *mapView) Type() string          { return "dict" }
func (v *mapView) Freeze()               { v.private().Freeze() }
func (v *mapView) Truth() starlark.Bool  { return v.Len() > 0 }
func (v *mapView) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: dict") }
func (v *mapView) Len() int {
	if v.own != nil {
		return v.own.Len()
	}
	return len(v.src)
}

func (v *mapView) Get(k starlark.Value) (starlark.Value, bool, error) {
	if v.own != nil {
		return v.own.Get(k)
	}
	ks, ok := k.(starlark.String)
	if !ok {
		if _, err := k.Hash(); err != nil {
			return nil, false, err
		}
		return nil, false, nil
	}
	return v.get(string(ks))
}

func (v *mapView) get(k string) (starlark.Value, bool, error) {
	g, ok := v.src[k]
	if !ok {
		return nil, false, nil
	}
	switch g.(type) {
	case map[string]any, []any:
		if kid, ok := v.kids.get(k); ok {
			return kid, true, nil
		}
		kid := leaf(g)
		v.kids.put(k, kid)
		return kid, true, nil
	}
	return leaf(g), true, nil
}

// sortedKeys gives views a stable iteration order: Go maps have none.
func (v *mapView) sortedKeys() []string {
	keys := make([]string, 0, len(v.src))
	for k := range v.src {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortedValueKeys returns the sorted keys as Starlark strings; callers must not modify it.
func (v *mapView) sortedValueKeys() []starlark.Value {
	if v.keys == nil {
		keys := v.sortedKeys()
		v.keys = make([]starlark.Value, len(keys))
		for i := range keys {
			v.keys[i] = stringValueAt(&keys[i])
		}
	}
	return v.keys
}

func (v *mapView) Iterate() starlark.Iterator {
	if v.own != nil {
		return v.own.Iterate()
	}
	return starlark.Tuple(v.sortedValueKeys()).Iterate()
}

func (v *mapView) Items() []starlark.Tuple {
	if v.own != nil {
		return v.own.Items()
	}
	keys := v.sortedValueKeys()
	items := make([]starlark.Tuple, len(keys))
	pairs := make([]starlark.Value, 2*len(keys))
	for i, k := range keys {
		e, _, _ := v.get(string(k.(starlark.String)))
		pair := pairs[2*i : 2*i+2 : 2*i+2]
		pair[0], pair[1] = k, e
		items[i] = pair
	}
	return items
}

// private returns the view's own copy, making it on first use.
func (v *mapView) private() *starlark.Dict {
	if v.own == nil {
		v.own, v.kids, v.vals = v.copyDict(), kids{}, nil
	}
	return v.own
}

// copyDict returns a new dict of the view's entries in key order; nested containers are
// the view's (shared) child views. The entries are converted once per view, so copying a
// view in a loop (dict(template["labels"])) only inserts.
func (v *mapView) copyDict() *starlark.Dict {
	keys, vals := v.entries()
	d := starlark.NewDict(len(keys))
	for i, k := range keys {
		d.SetKey(k, vals[i])
	}
	return d
}

// entries returns the view's keys in order and their values, converted once per view;
// callers must not modify them.
func (v *mapView) entries() (keys, vals []starlark.Value) {
	keys = v.sortedValueKeys()
	if v.vals == nil {
		v.vals = make([]starlark.Value, len(keys))
		for i, k := range keys {
			v.vals[i], _, _ = v.get(string(k.(starlark.String)))
		}
	}
	return keys, v.vals
}

func (v *mapView) SetKey(k, e starlark.Value) error { return v.private().SetKey(k, e) }

var mapReadMethods = map[string]bool{"get": true, "keys": true, "values": true, "items": true}

func (v *mapView) Attr(name string) (starlark.Value, error) {
	if v.own == nil && mapReadMethods[name] {
		return starlark.NewBuiltin(name, v.method).BindReceiver(v), nil
	}
	return v.private().Attr(name)
}

func (v *mapView) AttrNames() []string { return starlark.NewDict(0).AttrNames() }

// method implements the read-only dict methods without copying the view.
func (v *mapView) method(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	switch b.Name() {
	case "get":
		var key, dflt starlark.Value = nil, starlark.None
		if err := starlark.UnpackPositionalArgs("get", args, kwargs, 1, &key, &dflt); err != nil {
			return nil, err
		}
		e, ok, err := v.Get(key)
		if err != nil {
			return nil, fmt.Errorf("get: %w", err)
		}
		if !ok {
			return dflt, nil
		}
		return e, nil
	case "keys", "values", "items":
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
			return nil, err
		}
		keys := v.sortedValueKeys()
		out := make([]starlark.Value, len(keys))
		for i, k := range keys {
			switch b.Name() {
			case "keys":
				out[i] = k
			case "values":
				out[i], _, _ = v.get(string(k.(starlark.String)))
			default:
				e, _, _ := v.get(string(k.(starlark.String)))
				out[i] = starlark.Tuple{k, e}
			}
		}
		return starlark.NewList(out), nil
	}
	return nil, fmt.Errorf("dict has no .%s method", b.Name())
}

func (v *mapView) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return starlark.CompareDepth(op, realise(v), realise(y), depth)
}

func (v *mapView) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	if side == starlark.Left {
		return starlark.Binary(op, realise(v), realise(y))
	}
	return starlark.Binary(op, realise(y), realise(v))
}

// ---- listView ----

func (v *listView) String() string        { return repr(v) }
func (v *listView) Type() string          { return "list" }
func (v *listView) Freeze()               { v.private().Freeze() }
func (v *listView) Truth() starlark.Bool  { return v.Len() > 0 }
func (v *listView) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: list") }
func (v *listView) Len() int {
	if v.own != nil {
		return v.own.Len()
	}
	return len(v.src)
}

func (v *listView) Index(i int) starlark.Value {
	if v.own != nil {
		return v.own.Index(i)
	}
	g := v.src[i]
	switch g.(type) {
	case map[string]any, []any:
		if v.kids == nil {
			v.kids = make([]starlark.Value, len(v.src))
		}
		if v.kids[i] == nil {
			v.kids[i] = leaf(g)
		}
		return v.kids[i]
	}
	return leaf(g)
}

func (v *listView) Iterate() starlark.Iterator {
	if v.own != nil {
		return v.own.Iterate()
	}
	return &listViewIterator{v: v}
}

type listViewIterator struct {
	v *listView
	i int
}

func (it *listViewIterator) Next(p *starlark.Value) bool {
	if it.i >= it.v.Len() {
		return false
	}
	*p = it.v.Index(it.i)
	it.i++
	return true
}
func (it *listViewIterator) Done() {}

func (v *listView) private() *starlark.List {
	if v.own == nil {
		elems := make([]starlark.Value, len(v.src))
		for i := range v.src {
			elems[i] = v.Index(i)
		}
		v.own, v.kids = starlark.NewList(elems), nil
	}
	return v.own
}

func (v *listView) Slice(start, end, step int) starlark.Value {
	return v.private().Slice(start, end, step)
}

func (v *listView) SetIndex(i int, e starlark.Value) error { return v.private().SetIndex(i, e) }

func (v *listView) Attr(name string) (starlark.Value, error) { return v.private().Attr(name) }
func (v *listView) AttrNames() []string                      { return starlark.NewList(nil).AttrNames() }

func (v *listView) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return starlark.CompareDepth(op, realise(v), realise(y), depth)
}

func (v *listView) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	if side == starlark.Left {
		return starlark.Binary(op, realise(v), realise(y))
	}
	return starlark.Binary(op, realise(y), realise(v))
}

// fromGo converts a JSON-shaped Go value to ordinary Starlark values, eagerly (stdlib
// results, realised views).
func fromGo(v any) starlark.Value {
	switch v := v.(type) {
	case map[string]any:
		d := starlark.NewDict(len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			d.SetKey(starlark.String(k), fromGo(v[k]))
		}
		return d
	case []any:
		elems := make([]starlark.Value, len(v))
		for i, e := range v {
			elems[i] = fromGo(e)
		}
		return starlark.NewList(elems)
	}
	return scalar(v)
}
