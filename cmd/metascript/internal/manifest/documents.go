package manifest

import (
	"bytes"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine/hooks"
)

// Document is one document of a YAML or JSON stream, for commands that rewrite files rather
// than read controllers out of them.
type Document struct {
	// Line is the file line of the document's first line of content, the line a DocError
	// names. Start is the file line of Text's first line, which may be a comment or blank.
	Line, Start int
	// Text is the document as written, without its `---` separator.
	Text []byte
	// Value is the document decoded as Parse decodes it (int64 for integral numbers, nil for
	// an empty document); Err says why it could not be, and then Value is nil.
	Value any
	Err   error
}

// Documents splits data at its `---` separator lines, as Parse does, and decodes each
// document. A document of nothing but comments has a nil Value, as an empty one has.
func Documents(data []byte) []Document {
	var out []Document
	for _, d := range splitDocuments(data) {
		doc := Document{Line: d.line, Start: d.line - leadingSkipped(d.text), Text: d.text}
		j, err := yaml.YAMLToJSON(d.text)
		if err == nil {
			doc.Value, err = hooks.DecodeJSON(j)
		}
		doc.Err = err
		out = append(out, doc)
	}
	return out
}

// leadingSkipped counts the blank and comment lines splitDocuments skips before a
// document's first line of content.
func leadingSkipped(text []byte) int {
	n := 0
	for _, line := range bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n")) {
		if !isBlankOrComment(string(line)) {
			break
		}
		n++
	}
	return n
}
