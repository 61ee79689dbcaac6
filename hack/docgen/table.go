package main

import (
	"fmt"
	"go/ast"
	"strings"
)

// external types the API uses, as a table names them.
var external = map[string]string{
	"metav1.Duration":                 "duration (`500ms`, `1m30s`)",
	"metav1.Time":                     "time (RFC 3339)",
	"resource.Quantity":               "quantity (`64Mi`, `1G`)",
	"intstr.IntOrString":              "count or percentage (`2`, `\"10%\"`)",
	"runtime.RawExtension":            "object",
	"metav1.ObjectMeta":               "[ObjectMeta](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#ObjectMeta)",
	"metav1.LabelSelector":            "[LabelSelector](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#LabelSelector)",
	"metav1.LabelSelectorRequirement": "[LabelSelectorRequirement](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#LabelSelectorRequirement)",
	"metav1.Condition":                "[Condition](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#Condition)",
}

var builtin = map[string]string{"string": "string", "bool": "boolean", "int32": "integer", "int64": "integer"}

// tables renders field tables of one package; where says on which page each type's table is.
type tables struct {
	pkg   *apiPackage
	where map[string]string // type name → page file name
}

// render is the generated part of a marked region for the type name on page: its doc
// comment, its table and the API server's rules for it.
func (t *tables) render(name, page string) (string, error) {
	typ := t.pkg.Types[name]
	if typ == nil {
		return "", fmt.Errorf("no type %s in the API package", name)
	}
	if typ.Struct == nil {
		return "", fmt.Errorf("%s is not a struct type", name)
	}
	var b strings.Builder
	if typ.Doc != "" {
		b.WriteString(html(typ.Doc) + "\n\n")
	}
	b.WriteString("| field | type | required | default | description |\n| --- | --- | --- | --- | --- |\n")
	if err := t.rows(&b, typ, page); err != nil {
		return "", err
	}
	if rules := xValidations(typ.Markers); len(rules) > 0 {
		b.WriteString("\nRules the API server enforces:\n\n")
		for _, r := range rules {
			b.WriteString("- " + r + "\n")
		}
	}
	return b.String(), nil
}

// rows writes one row per field of typ, the fields of inline structs in their place.
func (t *tables) rows(b *strings.Builder, typ *goType, page string) error {
	for _, f := range typ.Struct {
		if f.Inline {
			name := typeName(f.Type)
			if name == "metav1.TypeMeta" || name == "metav1.ListMeta" {
				continue // apiVersion and kind: the page says them
			}
			inner := t.pkg.Types[name]
			if inner == nil || inner.Struct == nil {
				return fmt.Errorf("%s: inline %s is not a struct of the API package", typ.Name, name)
			}
			if err := t.rows(b, inner, page); err != nil {
				return err
			}
			continue
		}
		cell, err := t.typeCell(f.Type, f.Markers, page)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", typ.Name, f.GoName, err)
		}
		req := "no"
		if required(f) {
			req = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", f.JSON, cell, req, escape(code(fieldDefault(f))),
			escape(html(describe(f))))
	}
	return nil
}

// typeCell names a field's type; a struct of the API package links to its table.
func (t *tables) typeCell(e ast.Expr, markers []string, page string) (string, error) {
	switch x := e.(type) {
	case *ast.StarExpr:
		return t.typeCell(x.X, markers, page)
	case *ast.ArrayType:
		inner, err := t.typeCell(x.Elt, nil, page)
		return "list of " + inner, err
	case *ast.MapType:
		k, err := t.typeCell(x.Key, nil, page)
		if err != nil {
			return "", err
		}
		v, err := t.typeCell(x.Value, nil, page)
		return "map of " + k + " to " + v, err
	case *ast.SelectorExpr:
		if s, ok := external[typeName(x)]; ok {
			return s, nil
		}
		return "", fmt.Errorf("type %s: add it to the external types of hack/docgen", typeName(x))
	case *ast.Ident:
		if s, ok := builtin[x.Name]; ok {
			return withEnum(s, markers), nil
		}
		named := t.pkg.Types[x.Name]
		if named == nil {
			return "", fmt.Errorf("unknown type %s", x.Name)
		}
		if named.Struct == nil {
			under, err := t.typeCell(named.Underlying, nil, page)
			if err != nil {
				return "", err
			}
			if _, ok := marker(markers, "kubebuilder:validation:Enum"); ok {
				return withEnum(under, markers), nil
			}
			return withEnum(under, named.Markers), nil
		}
		return t.link(x.Name, page), nil
	}
	return "", fmt.Errorf("unsupported type expression %T", e)
}

// link is a Markdown link to the table of the named type.
func (t *tables) link(name, page string) string {
	anchor := "#" + strings.ToLower(name)
	switch on := t.where[name]; on {
	case "":
		return name
	case page:
		return "[" + name + "](" + anchor + ")"
	default:
		return "[" + name + "](" + on + anchor + ")"
	}
}

// withEnum adds the values of an Enum marker to a type: "string, one of `a`, `b`".
func withEnum(s string, markers []string) string {
	v, ok := marker(markers, "kubebuilder:validation:Enum")
	if !ok {
		return s
	}
	vals := strings.Split(v, ";")
	for i := range vals {
		vals[i] = "`" + vals[i] + "`"
	}
	return s + ", one of " + strings.Join(vals, ", ")
}

// describe is a field's doc comment followed by its validation rules. A comment that opens
// with the Go field's name opens with its JSON name instead, as the reader writes it.
func describe(f field) string {
	doc := f.Doc
	if rest, ok := strings.CutPrefix(doc, f.GoName+" "); ok {
		doc = "`" + f.JSON + "` " + rest
	}
	parts := []string{doc}
	rules := []struct{ marker, format string }{
		{"kubebuilder:validation:Minimum", "Minimum %s."},
		{"kubebuilder:validation:MinLength", "At least %s characters."},
		{"kubebuilder:validation:MaxLength", "At most %s characters."},
		{"kubebuilder:validation:MinItems", "At least %s items."},
		{"kubebuilder:validation:MaxItems", "At most %s items."},
		{"kubebuilder:validation:Pattern", "Matches `%s`."},
	}
	for _, r := range rules {
		v, ok := marker(f.Markers, r.marker)
		switch {
		case !ok:
		case v == "1" && r.marker == "kubebuilder:validation:MinLength":
			parts = append(parts, "Not empty.")
		case v == "1" && r.marker == "kubebuilder:validation:MinItems":
			parts = append(parts, "At least one item.")
		default:
			parts = append(parts, fmt.Sprintf(r.format, strings.Trim(v, "`")))
		}
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// code puts a one-word value in backticks.
func code(s string) string {
	if s == "" || strings.ContainsAny(s, " `") {
		return s
	}
	return "`" + s + "`"
}

// html keeps Markdown from reading <group>/<version> as tags.
func html(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

// escape keeps a cell's pipes from ending it.
func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
