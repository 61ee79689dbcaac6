package convert

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
)

// types are the Go types that say which fields Metascript's controller resources have.
var types = map[string]reflect.Type{
	"CompositeController": reflect.TypeFor[v1alpha1.CompositeController](),
	"DecoratorController": reflect.TypeFor[v1alpha1.DecoratorController](),
}

// dropped says why Metascript has no place for fields Metacontroller has. A field it does
// not name is reported as one the kind does not have. Patterns match a field's path without
// list indexes; * matches one key.
var dropped = []struct{ pattern, why string }{
	{"spec.hooks.preUpdateChild", "Metascript calls no hook around the update of a child: do the work in sync"},
	{"spec.hooks.postUpdateChild", "Metascript calls no hook around the update of a child: do the work in sync"},
}

// why says why the field at p is dropped from a resource of the given kind.
func why(kind string, p path) string {
	var keys []string
	for _, s := range p {
		if k, ok := s.(string); ok {
			keys = append(keys, k)
		}
	}
	for _, d := range dropped {
		if matches(strings.Split(d.pattern, "."), keys) {
			return d.why
		}
	}
	return "Metascript's " + kind + " has no such field"
}

// matches says whether the keys of a path match a pattern's, * matching any key.
func matches(pattern, keys []string) bool {
	if len(pattern) != len(keys) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != keys[i] {
			return false
		}
	}
	return true
}

// dropUnknown removes and reports every field of obj that Metascript's type of the kind does
// not have, as the API server would prune it; the names must match exactly, as there.
func (c *converter) dropUnknown(at path, kind, name string, obj map[string]any) {
	unknownFields(obj, types[kind], nil, func(p path) {
		c.report(at, name, p, "dropped: "+why(kind, p))
	})
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownFields calls drop with the path of every key of v, a decoded JSON value at path at,
// that type t has no field for, and deletes the key. Types that decode themselves (durations,
// quantities, times) are taken as they are.
func unknownFields(v any, t reflect.Type, at path, drop func(path)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				drop(at.with(k))
				delete(m, k)
				continue
			}
			unknownFields(m[k], ft, at.with(k), drop)
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			unknownFields(m[k], t.Elem(), at.with(k), drop)
		}
	case reflect.Slice, reflect.Array:
		l, _ := v.([]any)
		for i, e := range l {
			unknownFields(e, t.Elem(), at.with(i), drop)
		}
	}
}

// jsonFields maps the JSON names of struct type t's fields to their types, with the fields of
// embedded structs without a name of their own (`json:",inline"`) flattened, as
// encoding/json reads them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				if _, ok := out[k]; !ok { // a field of t's own wins
					out[k] = v
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
