package tsdecl

import (
	"regexp"
	"strings"
)

// writer builds a declaration file: indented lines and JSDoc comments.
type writer struct {
	b      strings.Builder
	indent int
}

func (w *writer) in()  { w.indent++ }
func (w *writer) out() { w.indent-- }

func (w *writer) line(s string) {
	w.b.WriteString(strings.Repeat("  ", w.indent))
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}

// blank writes an empty line, except at the start of a block.
func (w *writer) blank() {
	s := w.b.String()
	if s == "" || strings.HasSuffix(s, "{\n") || strings.HasSuffix(s, "\n\n") {
		return
	}
	w.b.WriteByte('\n')
}

// doc writes text as a JSDoc comment; nothing when text is empty.
func (w *writer) doc(text string) {
	text = strings.TrimSpace(strings.ReplaceAll(text, "*/", "*\\/"))
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		w.line("/** " + lines[0] + " */")
		return
	}
	w.line("/**")
	for _, l := range lines {
		w.line(strings.TrimRight(" * "+l, " "))
	}
	w.line(" */")
}

func (w *writer) String() string { return w.b.String() }

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// property is name as an interface member: quoted unless it is an identifier.
func property(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	return `"` + name + `"`
}
