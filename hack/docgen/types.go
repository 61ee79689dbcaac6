package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// goType is one named type of the API package, as the tables need it.
type goType struct {
	Name string
	// Doc is the type's doc comment without its markers, on one line.
	Doc string
	// Markers are the +marker lines of the doc comment, without the +.
	Markers []string
	// Struct is set for struct types: their fields in source order.
	Struct []field
	// Underlying is the underlying type of a non-struct type (string for an enum).
	Underlying ast.Expr
	// Pos is where the type is declared, for errors.
	Pos token.Position
}

// field is one field of a struct type.
type field struct {
	GoName string
	// JSON is the field's name in JSON; empty for an inline (embedded) struct.
	JSON      string
	Inline    bool
	OmitEmpty bool
	Type      ast.Expr
	Doc       string
	Markers   []string
}

// apiPackage is the parsed package: its named types by name.
type apiPackage struct {
	Types map[string]*goType
}

// parseAPI reads the non-test, non-generated Go files of dir.
func parseAPI(dir string) (*apiPackage, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	pkg := &apiPackage{Types: map[string]*goType{}}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(filepath.Base(name), "zz_generated") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				text, markers := splitComment(doc)
				t := &goType{Name: ts.Name.Name, Doc: text, Markers: markers, Pos: fset.Position(ts.Pos())}
				if st, ok := ts.Type.(*ast.StructType); ok {
					if t.Struct, err = structFields(fset, st); err != nil {
						return nil, err
					}
				} else {
					t.Underlying = ts.Type
				}
				pkg.Types[t.Name] = t
			}
		}
	}
	return pkg, nil
}

func structFields(fset *token.FileSet, st *ast.StructType) ([]field, error) {
	var out []field
	for _, f := range st.Fields.List {
		var tag string
		if f.Tag != nil {
			tag = reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		text, markers := splitComment(f.Doc)
		fd := field{JSON: name, Type: f.Type, Doc: text, Markers: markers,
			OmitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
			Inline:    strings.Contains(","+opts+",", ",inline,")}
		switch {
		case len(f.Names) == 1:
			fd.GoName = f.Names[0].Name
		case len(f.Names) == 0:
			fd.GoName = typeName(f.Type)
			if !fd.Inline && fd.JSON == "" {
				return nil, fmt.Errorf("%s: embedded %s with neither a json name nor inline", fset.Position(f.Pos()), fd.GoName)
			}
		default:
			return nil, fmt.Errorf("%s: several fields in one declaration", fset.Position(f.Pos()))
		}
		if fd.JSON == "" && !fd.Inline {
			return nil, fmt.Errorf("%s: field %s has no json name", fset.Position(f.Pos()), fd.GoName)
		}
		out = append(out, fd)
	}
	return out, nil
}

// typeName is the name an embedded field's type gives it: Foo, or pkg.Foo.
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.SelectorExpr:
		return typeName(t.X) + "." + t.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}

// splitComment returns a doc comment's prose on one line and its +marker lines.
func splitComment(cg *ast.CommentGroup) (string, []string) {
	if cg == nil {
		return "", nil
	}
	var prose []string
	var markers []string
	for _, line := range strings.Split(cg.Text(), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "+"):
			markers = append(markers, line[1:])
		case line != "":
			prose = append(prose, line)
		}
	}
	return strings.Join(prose, " "), markers
}

// marker returns the value of the marker name=value, if present.
func marker(markers []string, name string) (string, bool) {
	for _, m := range markers {
		if v, ok := strings.CutPrefix(m, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func hasMarker(markers []string, name string) bool {
	for _, m := range markers {
		if m == name {
			return true
		}
	}
	return false
}

// xValidations are the messages of a type's CEL rules (the API server's refusals).
func xValidations(markers []string) []string {
	var out []string
	for _, m := range markers {
		rest, ok := strings.CutPrefix(m, "kubebuilder:validation:XValidation:")
		if !ok {
			continue
		}
		if i := strings.Index(rest, `message="`); i >= 0 {
			msg := rest[i+len(`message="`):]
			out = append(out, strings.TrimSuffix(msg, `"`))
		}
	}
	return out
}

var (
	// A default is stated at the start of a clause of the doc comment: "Defaults to X.",
	// "FieldName defaults to X.", "...; default X." Anywhere else ("(default key ca.crt)",
	// "and defaults to ...") it describes something else than the field itself.
	defaultClause = regexp.MustCompile(`(?:^|[.;] )(?:[A-Z][A-Za-z]* )?[Dd]efaults? (?:to )?(.+?)(?:[;:]|\. |\.$|$)`)
	// "http (default) or https": the value before "(default)".
	defaultMarked = regexp.MustCompile(`(\S+) \(default\)`)
)

// fieldDefault is the default of a field: a +kubebuilder:default marker, or what its doc
// comment states at the start of a clause.
func fieldDefault(f field) string {
	if v, ok := marker(f.Markers, "kubebuilder:default"); ok {
		return v
	}
	if m := defaultMarked.FindStringSubmatch(f.Doc); m != nil {
		return m[1]
	}
	if m := defaultClause.FindStringSubmatch(f.Doc); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// required reports whether the API server requires the field: neither +optional nor
// omitempty, as controller-gen decides.
func required(f field) bool {
	return !hasMarker(f.Markers, "optional") && !f.OmitEmpty
}
