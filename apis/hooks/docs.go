package hooks

import (
	"embed"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"
)

// The doc comments of this package's types are the documentation of the protocol; they are
// read from the embedded source, so that generated declarations carry them without a copy
// that could drift.
//
//go:embed object.go composite.go decorator.go mapping.go
var sources embed.FS

// Doc returns the doc comment of type typeName, or of its field field when field is not
// empty, as plain text without the comment markers; "" when there is none.
func Doc(typeName, field string) string {
	key := typeName
	if field != "" {
		key += "." + field
	}
	return docs()[key]
}

var docs = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	entries, err := sources.ReadDir(".")
	if err != nil {
		panic(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		src, err := sources.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		f, err := parser.ParseFile(fset, e.Name(), src, parser.ParseComments)
		if err != nil {
			panic(err) // the package compiled, so its source parses
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				out[ts.Name.Name] = text(doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					for _, name := range fld.Names {
						out[ts.Name.Name+"."+name.Name] = text(fld.Doc)
					}
				}
			}
		}
	}
	return out
})

// text is a doc comment without its markers, lines as in the source.
func text(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.TrimSpace(g.Text())
}
