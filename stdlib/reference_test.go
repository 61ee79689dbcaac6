package stdlib

import (
	"flag"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite REFERENCE.md from the doc comments")

// TestReferencePage keeps REFERENCE.md, the page for hook authors, equal to what the doc
// comments say. Regenerate it with: go test ./stdlib -run TestReferencePage -update
func TestReferencePage(t *testing.T) {
	got := referencePage(t)
	if *update {
		if err := os.WriteFile("REFERENCE.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("REFERENCE.md")
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if string(want) != got {
		t.Fatal("REFERENCE.md is out of date with the doc comments; regenerate it with: go test ./stdlib -run TestReferencePage -update")
	}
}

func referencePage(t *testing.T) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from the doc comments of package stdlib by `go test ./stdlib -run TestReferencePage -update`. Do not edit. -->\n\n")
	b.WriteString("# Hook standard library\n\n")
	writeDoc(&b, packageDoc(t))
	docs := moduleDocs(t)
	for _, m := range All() {
		b.WriteString("\n## " + m.Name + "\n\n")
		writeDoc(&b, docs[m.Name])
	}
	return b.String()
}

// writeDoc renders a Go doc comment as Markdown: indented blocks become code blocks, list
// items stay list items, and "X is the x module" openings are kept as prose.
func writeDoc(b *strings.Builder, doc string) {
	lines := strings.Split(strings.TrimRight(doc, "\n"), "\n")
	inCode := false
	for i, l := range lines {
		code := strings.HasPrefix(l, "\t") && !strings.HasPrefix(strings.TrimSpace(l), "- ")
		switch {
		case code && !inCode:
			b.WriteString("```\n")
			inCode = true
		case !code && inCode && l != "":
			b.WriteString("```\n")
			inCode = false
		}
		if inCode {
			if l == "" {
				// A blank line inside a code block ends it unless more code follows.
				if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
					b.WriteString("\n")
					continue
				}
				b.WriteString("```\n\n")
				inCode = false
				continue
			}
			b.WriteString(strings.TrimPrefix(l, "\t") + "\n")
			continue
		}
		b.WriteString(strings.TrimPrefix(strings.TrimPrefix(l, "  "), "\t") + "\n")
	}
	if inCode {
		b.WriteString("```\n")
	}
}

func packageDoc(t *testing.T) string {
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if file.Doc != nil {
			return file.Doc.Text()
		}
	}
	t.Fatal("no package doc")
	return ""
}
