package tsdecl

import (
	"fmt"
	"reflect"
	"strings"
)

// goTypes writes TypeScript declarations of Go types by reflection, in the order they are
// first reached. The rules, which the doc comments of apis/hooks rely on:
//
//   - A struct or a named map or slice of the documented package is declared once under
//     its Go name (interface, or type alias) with its doc comment, Object as
//     KubernetesObject; other Go types are
//     spelled out where they are used.
//   - A field is named by its json tag and is optional when the tag says omitempty or the
//     field is a pointer. The tag ts:"null" adds "| null" (the engine reads null as absent);
//     ts:"index" makes a map field the interface's index signature (fields beside the
//     declared ones); tstype:"..." replaces the field's type.
//   - A pointer that is not a field (a map's value) may be null.
//   - string, bool and numbers are string, boolean and number; any is any; []T is T[];
//     map[string]T is { [key: string]: T }.
type goTypes struct {
	pkg  string // the documented package's path
	doc  func(typeName, field string) string
	seen map[reflect.Type]bool
	todo []reflect.Type
}

func newGoTypes(pkg string, doc func(typeName, field string) string) *goTypes {
	return &goTypes{pkg: pkg, doc: doc, seen: map[reflect.Type]bool{}}
}

// declared reports whether t is declared by name rather than spelled out.
func (g *goTypes) declared(t reflect.Type) bool {
	return t.PkgPath() == g.pkg && t.Name() != "" &&
		(t.Kind() == reflect.Struct || t.Kind() == reflect.Map || t.Kind() == reflect.Slice)
}

// ref is the TypeScript spelling of t where it is used, queueing declared types.
func (g *goTypes) ref(t reflect.Type) (string, error) {
	if g.declared(t) {
		if !g.seen[t] {
			g.seen[t] = true
			g.todo = append(g.todo, t)
		}
		return tsName(t), nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number", nil
	case reflect.Interface:
		return "any", nil
	case reflect.Pointer:
		elem, err := g.ref(t.Elem())
		return elem + " | null", err
	case reflect.Slice:
		elem, err := g.ref(t.Elem())
		if strings.Contains(elem, "|") {
			elem = "(" + elem + ")"
		}
		return elem + "[]", err
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return "", fmt.Errorf("%s: map keys must be strings", t)
		}
		elem, err := g.ref(t.Elem())
		return "{ [key: string]: " + elem + " }", err
	}
	return "", fmt.Errorf("%s: no TypeScript spelling for a %s", t, t.Kind())
}

// renamed are declared types whose Go name would shadow a JavaScript global inside the
// namespace.
var renamed = map[string]string{"Object": "KubernetesObject"}

// tsName is the name declared type t has in the declarations.
func tsName(t reflect.Type) string {
	if n, ok := renamed[t.Name()]; ok {
		return n
	}
	return t.Name()
}

// field is one member of a declared interface.
type field struct {
	name, typ, doc string
	optional       bool
	index          bool
}

// fields are t's members in declaration order, embedded structs' in their place.
func (g *goTypes) fields(t reflect.Type) ([]field, error) {
	var out []field
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			inner, err := g.fields(f.Type)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		ts := f.Tag.Get("ts")
		if name == "-" && ts != "index" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fd := field{name: name, doc: g.doc(t.Name(), f.Name)}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			fd.optional = true
			ft = ft.Elem()
		}
		var err error
		switch {
		case ts == "index":
			if ft.Kind() != reflect.Map {
				return nil, fmt.Errorf("%s.%s: ts:\"index\" needs a map", t.Name(), f.Name)
			}
			fd.index = true
			fd.typ, err = g.ref(ft.Elem())
		case f.Tag.Get("tstype") != "":
			fd.typ = f.Tag.Get("tstype")
		default:
			fd.typ, err = g.ref(ft)
		}
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		if strings.Contains(","+opts+",", ",omitempty,") {
			fd.optional = true
		}
		switch ts {
		case "", "index":
		case "null":
			fd.typ += " | null"
		default:
			return nil, fmt.Errorf("%s.%s: unknown ts tag %q", t.Name(), f.Name, ts)
		}
		out = append(out, fd)
	}
	return out, nil
}

// write declares every queued type, and those they reach, into w.
func (g *goTypes) write(w *writer) error {
	for len(g.todo) > 0 {
		t := g.todo[0]
		g.todo = g.todo[1:]
		w.blank()
		w.doc(g.doc(t.Name(), ""))
		if t.Kind() != reflect.Struct {
			underlying := reflect.SliceOf(t.Elem())
			if t.Kind() == reflect.Map {
				underlying = reflect.MapOf(t.Key(), t.Elem())
			}
			spelled, err := g.ref(underlying)
			if err != nil {
				return fmt.Errorf("%s: %w", t.Name(), err)
			}
			w.line("type " + tsName(t) + " = " + spelled + ";")
			continue
		}
		fields, err := g.fields(t)
		if err != nil {
			return err
		}
		w.line("interface " + tsName(t) + " {")
		w.in()
		for _, f := range fields {
			w.doc(f.doc)
			switch {
			case f.index:
				w.line("[field: string]: " + f.typ + ";")
			case f.optional:
				w.line(property(f.name) + "?: " + f.typ + ";")
			default:
				w.line(property(f.name) + ": " + f.typ + ";")
			}
		}
		w.out()
		w.line("}")
	}
	return nil
}
