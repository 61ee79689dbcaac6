package convert

import (
	"fmt"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
)

// path is the path of a value in a document: map keys (string) and list indexes (int).
type path []any

// with returns a new path: p followed by segs.
func (p path) with(segs ...any) path {
	out := make(path, 0, len(p)+len(segs))
	return append(append(out, p...), segs...)
}

// String writes the path as the offline commands name fields: spec.childResources[0].method.
func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// positions finds where the values of one document are written in its file. sigs.k8s.io/yaml
// keeps no positions, so the document is parsed a second time into YAML nodes.
type positions struct {
	doc  manifest.Document
	root *yaml.Node // nil when the nodes could not be read
}

func newPositions(d manifest.Document) *positions {
	p := &positions{doc: d}
	var n yaml.Node
	if err := yaml.Unmarshal(d.Text, &n); err == nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		p.root = n.Content[0]
	}
	return p
}

// line is the file line of the key (or list item) at, or of the nearest enclosing one that
// is written in the file; the document's line when nothing is.
func (p *positions) line(at path) int {
	n := p.root
	if n == nil {
		return p.doc.Line
	}
	line := n.Line
walk:
	for _, seg := range at {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch s := seg.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				break walk
			}
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == s {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				break walk
			}
		case int:
			if n.Kind != yaml.SequenceNode || s >= len(n.Content) {
				break walk
			}
			n = n.Content[s]
			line = n.Line
		}
	}
	return p.doc.Start + line - 1
}
