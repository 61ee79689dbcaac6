// Package yamlpos finds where a field is written in a YAML (or JSON) file: the line and
// column of the field a path such as spec.hooks.sync.budget.maxSteps names, and of a
// position inside a literal block scalar (a hook's source), so that a problem can point
// into the file rather than into the decoded object.
package yamlpos

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"metascript.dev/metascript/cmd/metascript/internal/fieldpath"
)

// Position is a 1-based line and column in a file.
type Position struct{ Line, Col int }

// Document is one YAML document and where it lies in its file.
type Document struct {
	node *yaml.Node
	// lines are the document's text; first is the file line of lines[0].
	lines []string
	first int
}

// SyntaxError is a document that is not YAML, at a line of the file.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

var lineMessage = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse reads text, one document whose first line is line first of its file. A syntax error
// is a *SyntaxError at its line in the file when the parser names one.
func Parse(text []byte, first int) (*Document, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		msg := err.Error()
		if m := lineMessage.FindStringSubmatch(msg); m != nil {
			l, _ := strconv.Atoi(m[1])
			return nil, &SyntaxError{Line: first + l - 1, Msg: m[2]}
		}
		return nil, &SyntaxError{Line: first, Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	root := &n
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	lines := strings.Split(string(bytes.TrimSuffix(text, []byte("\n"))), "\n")
	return &Document{node: root, lines: lines, first: first}, nil
}

// Sub is the part of d at path (an item of a List, items[2]), or d itself when there is no
// such part.
func (d *Document) Sub(path string) *Document {
	n, _, ok := d.find(fieldpath.Parse(path))
	if !ok {
		return d
	}
	return &Document{node: n, lines: d.lines, first: d.first}
}

// Position is where the field at path is written: its key, or for a list item the item.
// A path that goes further than the document is placed at the deepest field it reaches (a
// required field that is missing, at the object that lacks it).
func (d *Document) Position(path string) Position {
	_, at, _ := d.find(fieldpath.Parse(path))
	return d.position(at)
}

// Source is the position in the file of line:col of the string at path. It is exact for a
// literal block scalar (`source: |`), whose lines are the file's lines shifted by the
// block's indentation; for any other string (quoted, folded, escaped) ok is false and the
// position is that of the field.
func (d *Document) Source(path string, line, col int) (pos Position, ok bool) {
	n, at, found := d.find(fieldpath.Parse(path))
	if !found || n.Kind != yaml.ScalarNode || n.Style&yaml.LiteralStyle == 0 || line < 1 {
		return d.position(at), false
	}
	// The block's content starts on the line after its `|` indicator.
	header := n.Line - 1 // index in lines of the indicator's line
	indent := -1
	for _, l := range d.lines[min(header+1, len(d.lines)):] {
		if strings.TrimSpace(l) != "" {
			indent = len(l) - len(strings.TrimLeft(l, " "))
			break
		}
	}
	if indent < 0 {
		return d.position(at), false
	}
	if header+line >= len(d.lines) {
		// Past the document's last line (an error at the end of a source that ends the
		// document): the end of that line.
		last := len(d.lines) - 1
		return Position{Line: d.first + last, Col: len(d.lines[last]) + 1}, true
	}
	return Position{Line: d.first + header + line, Col: indent + max(col, 1)}, true
}

func (d *Document) position(n *yaml.Node) Position {
	return Position{Line: d.first + n.Line - 1, Col: n.Column}
}

// find follows path from the document's top. It returns the node path names, the node to
// point at for it (a mapping's key rather than its value) and whether the whole path was
// found; when it was not, at is the deepest node reached.
func (d *Document) find(path []fieldpath.Step) (value, at *yaml.Node, ok bool) {
	value, at = d.node, d.node
	for _, s := range path {
		value = resolve(value)
		switch value.Kind {
		case yaml.MappingNode:
			next := -1
			for i := 0; i+1 < len(value.Content); i += 2 {
				if value.Content[i].Value == s.Key {
					next = i
				}
			}
			if next < 0 {
				return value, at, false
			}
			at, value = value.Content[next], value.Content[next+1]
		case yaml.SequenceNode:
			i := s.Index()
			if i < 0 || i >= len(value.Content) {
				return value, at, false
			}
			value = value.Content[i]
			at = value
		default:
			return value, at, false
		}
	}
	return resolve(value), at, true
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
