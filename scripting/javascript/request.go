package javascript

import (
	"slices"

	"github.com/dop251/goja"
)

// The request reaches a hook as lazy views over the engine's map[string]any / []any: a
// mapView is a goja dynamic object and a listView a dynamic array (Array.isArray is true and
// Array.prototype methods apply), and a leaf is converted only when the hook reads it. A
// container read twice is the same object (cached in kids), so === and the object graph
// behave as for a parsed JSON document.
//
// Keys enumerate in sorted order (Object.keys, for-in, JSON.stringify, spread), so output
// built from a request is deterministic.
//
// Copy-on-write: the engine's maps are never written. The first write to a view (a property
// set or deleted, an element set, length changed) gives that view a private copy of its own
// level (own), whose nested containers are still views, and applies the write there. A hook
// therefore behaves as if it owned a deep copy of its request, as a webhook did, and nothing
// outside its call changes.

type mapView struct {
	cs   *callState
	src  map[string]any
	kids map[string]goja.Value // container views already handed out, by key
	own  map[string]goja.Value // the private copy, after the first write
	keys []string              // enumeration order: sorted, then keys added in order
}

type listView struct {
	cs   *callState
	src  []any
	kids []goja.Value // container views already handed out, by index; made on first use
	own  []goja.Value // the private copy, after the first write
}

var (
	_ goja.DynamicObject = (*mapView)(nil)
	_ goja.DynamicArray  = (*listView)(nil)
)

// viewOf converts a request value: containers become views, leaves goja values.
func (cs *callState) viewOf(v any) goja.Value {
	switch x := v.(type) {
	case map[string]any:
		return cs.rt.NewDynamicObject(&mapView{cs: cs, src: x})
	case []any:
		return cs.rt.NewDynamicArray(&listView{cs: cs, src: x})
	}
	return cs.scalar(v)
}

// scalar converts a JSON-shaped leaf. Other Go values (never found in objects from the API
// server) go through goja's generic conversion.
func (cs *callState) scalar(v any) goja.Value {
	switch v := v.(type) {
	case nil:
		return goja.Null()
	case string:
		return cs.rt.ToValue(v)
	case bool:
		return cs.rt.ToValue(v)
	case int64:
		return cs.rt.ToValue(v)
	case float64:
		return cs.rt.ToValue(v)
	}
	return cs.rt.ToValue(v)
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func (m *mapView) Get(key string) goja.Value {
	if m.own != nil {
		return m.own[key]
	}
	v, ok := m.src[key]
	if !ok {
		return nil
	}
	if !isContainer(v) {
		return m.cs.scalar(v)
	}
	if k, ok := m.kids[key]; ok {
		return k
	}
	if m.kids == nil {
		m.kids = make(map[string]goja.Value, 4)
	}
	k := m.cs.viewOf(v)
	m.kids[key] = k
	return k
}

func (m *mapView) Has(key string) bool {
	if m.own != nil {
		_, ok := m.own[key]
		return ok
	}
	_, ok := m.src[key]
	return ok
}

func (m *mapView) Set(key string, val goja.Value) bool {
	m.copyOnWrite()
	if _, ok := m.own[key]; !ok {
		m.keys = append(m.keys, key)
	}
	m.own[key] = val
	return true
}

func (m *mapView) Delete(key string) bool {
	m.copyOnWrite()
	if _, ok := m.own[key]; ok {
		delete(m.own, key)
		m.keys = slices.DeleteFunc(m.keys, func(k string) bool { return k == key })
	}
	return true
}

func (m *mapView) Keys() []string {
	if m.own == nil && m.keys == nil {
		m.keys = make([]string, 0, len(m.src))
		for k := range m.src {
			m.keys = append(m.keys, k)
		}
		slices.Sort(m.keys)
	}
	// goja keeps the slice only while it enumerates; a copy keeps later writes from
	// changing an enumeration in progress.
	return slices.Clone(m.keys)
}

// copyOnWrite gives the view its private level, reusing the views already handed out.
func (m *mapView) copyOnWrite() {
	if m.own != nil {
		return
	}
	m.cs.reserve(int64(len(m.src)) * 64)
	m.Keys()
	own := make(map[string]goja.Value, len(m.src)+1)
	for _, k := range m.keys {
		own[k] = m.Get(k)
	}
	m.own, m.kids = own, nil
}

func (l *listView) Len() int {
	if l.own != nil {
		return len(l.own)
	}
	return len(l.src)
}

func (l *listView) Get(i int) goja.Value {
	if l.own != nil {
		if i < 0 || i >= len(l.own) {
			return nil
		}
		if v := l.own[i]; v != nil {
			return v
		}
		return goja.Undefined()
	}
	if i < 0 || i >= len(l.src) {
		return nil
	}
	v := l.src[i]
	if !isContainer(v) {
		return l.cs.scalar(v)
	}
	if l.kids == nil {
		l.kids = make([]goja.Value, len(l.src))
	} else if k := l.kids[i]; k != nil {
		return k
	}
	k := l.cs.viewOf(v)
	l.kids[i] = k
	return k
}

func (l *listView) Set(i int, val goja.Value) bool {
	if i < 0 {
		return false
	}
	l.copyOnWrite()
	if i >= len(l.own) {
		if !l.SetLen(i + 1) {
			return false
		}
	}
	l.own[i] = val
	return true
}

func (l *listView) SetLen(n int) bool {
	if n < 0 {
		return false
	}
	l.copyOnWrite()
	if n > len(l.own) {
		// A length set far beyond the elements would allocate them all at once.
		l.cs.reserve(int64(n-len(l.own)) * valueBytes)
		l.own = append(l.own, make([]goja.Value, n-len(l.own))...)
	} else {
		clear(l.own[n:])
		l.own = l.own[:n]
	}
	return true
}

func (l *listView) copyOnWrite() {
	if l.own != nil {
		return
	}
	l.cs.reserve(int64(len(l.src)) * valueBytes)
	own := make([]goja.Value, len(l.src))
	for i := range l.src {
		own[i] = l.Get(i)
	}
	l.own, l.kids = own, nil
}
