package main

import (
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A page marks each generated table:
//
//	### CompositeControllerSpec
//	<!-- fields:begin CompositeControllerSpec -->
//	(generated: replaced on every run)
//	<!-- fields:end -->
//
// The nearest heading above a region must name its type, so that links to the table
// (#compositecontrollerspec) land on it. Everything outside the regions is hand-written.
var (
	beginLine = regexp.MustCompile(`^<!-- fields:begin ([A-Za-z0-9]+) -->$`)
	endLine   = "<!-- fields:end -->"
	heading   = regexp.MustCompile(`^#{1,6} (.*)$`)
)

// generatedNote opens every region, for whoever edits the page.
const generatedNote = "<!-- Generated from apis/v1alpha1 by `make docs`; edit the Go doc comments, not this table. -->"

// region is one marked region of a page.
type region struct {
	typeName   string
	begin, end int // lines of the markers, 0-based
}

// page is a Markdown file with marked regions.
type page struct {
	path    string
	lines   []string
	regions []region
}

func readPage(path string) (*page, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return readPageText(path, string(data))
}

// readPageText finds the regions of text, the content of the page at path.
func readPageText(path, text string) (*page, error) {
	p := &page{path: path, lines: strings.Split(text, "\n")}
	lastHeading := ""
	open := -1
	for i, line := range p.lines {
		if m := heading.FindStringSubmatch(line); m != nil && open < 0 {
			lastHeading = m[1]
		}
		if m := beginLine.FindStringSubmatch(line); m != nil {
			if open >= 0 {
				return nil, fmt.Errorf("%s:%d: fields:begin inside the region opened at line %d", path, i+1, open+1)
			}
			if lastHeading != m[1] {
				return nil, fmt.Errorf("%s:%d: the region of %s must follow a heading that is exactly %q (found %q)",
					path, i+1, m[1], m[1], lastHeading)
			}
			open = i
			p.regions = append(p.regions, region{typeName: m[1], begin: i})
			continue
		}
		if strings.TrimSpace(line) == endLine {
			if open < 0 {
				return nil, fmt.Errorf("%s:%d: fields:end without fields:begin", path, i+1)
			}
			p.regions[len(p.regions)-1].end = i
			open = -1
		}
	}
	if open >= 0 {
		return nil, fmt.Errorf("%s:%d: fields:begin %s is never closed", path, open+1, p.regions[len(p.regions)-1].typeName)
	}
	return p, nil
}

// generate returns the page with every region rewritten.
func (p *page) generate(t *tables) (string, error) {
	var out []string
	next := 0
	for _, r := range p.regions {
		body, err := t.render(r.typeName, filepath.Base(p.path))
		if err != nil {
			return "", fmt.Errorf("%s:%d: %w", p.path, r.begin+1, err)
		}
		out = append(out, p.lines[next:r.begin+1]...)
		out = append(out, generatedNote)
		out = append(out, strings.Split(strings.TrimSuffix(body, "\n"), "\n")...)
		next = r.end
	}
	out = append(out, p.lines[next:]...)
	return strings.Join(out, "\n"), nil
}

// reference is every page of a reference directory and the tables they hold.
type reference struct {
	pages  []*page
	tables *tables
}

// loadReference reads the API package in apiDir and the pages *.md of docDir.
func loadReference(apiDir, docDir string) (*reference, error) {
	pkg, err := parseAPI(apiDir)
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(docDir, "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	ref := &reference{tables: &tables{pkg: pkg, where: map[string]string{}}}
	for _, path := range paths {
		p, err := readPage(path)
		if err != nil {
			return nil, err
		}
		for _, r := range p.regions {
			if on := ref.tables.where[r.typeName]; on != "" {
				return nil, fmt.Errorf("%s:%d: %s has a table in %s already", path, r.begin+1, r.typeName, on)
			}
			ref.tables.where[r.typeName] = filepath.Base(path)
		}
		ref.pages = append(ref.pages, p)
	}
	return ref, nil
}

// stale returns, per page path, the page as it should be, for every page that differs.
func (ref *reference) stale() (map[string]string, error) {
	out := map[string]string{}
	for _, p := range ref.pages {
		want, err := p.generate(ref.tables)
		if err != nil {
			return nil, err
		}
		if want != strings.Join(p.lines, "\n") {
			out[p.path] = want
		}
	}
	return out, nil
}

// missing lists the struct types reachable from roots that no page has a table of. A type
// used only inline needs none: its fields are in its embedder's table.
func (ref *reference) missing(roots []string) []string {
	seen, needs := map[string]bool{}, map[string]bool{}
	var visit func(name string, inline bool)
	visit = func(name string, inline bool) {
		typ := ref.tables.pkg.Types[name]
		if typ == nil || typ.Struct == nil {
			return
		}
		needs[name] = needs[name] || !inline
		if seen[name] {
			return
		}
		seen[name] = true
		for _, f := range typ.Struct {
			visit(baseType(f.Type), f.Inline)
		}
	}
	for _, r := range roots {
		visit(r, false)
	}
	var out []string
	for name, need := range needs {
		if need && ref.tables.where[name] == "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// baseType is the API package's type a field holds, through pointers, lists and map values;
// empty for an external or built-in type.
func baseType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return baseType(x.X)
	case *ast.ArrayType:
		return baseType(x.Elt)
	case *ast.MapType:
		return baseType(x.Value)
	case *ast.Ident:
		return x.Name
	}
	return ""
}
