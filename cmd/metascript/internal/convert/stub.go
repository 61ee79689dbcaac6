package convert

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"metascript.dev/metascript/scripting"
)

// FillMeIn starts the message every stub fails with.
const FillMeIn = "fill me in"

// width is the longest line a stub's comments are wrapped to.
const width = 96

// syntax is what a stub needs of a language.
type syntax struct {
	comment string
	words   *strings.Replacer
	// function is the hook's function, failing with the quoted message msg.
	function func(hook, msg string) string
}

var syntaxes = map[scripting.Language]syntax{
	scripting.Starlark: {
		comment: "#",
		words:   strings.NewReplacer("{null}", "None", "{true}", "True", "{false}", "False"),
		function: func(hook, msg string) string {
			return fmt.Sprintf("def %s(request):\n    fail(%s)\n", hook, msg)
		},
	},
	scripting.JavaScript: {
		comment: "//",
		words:   strings.NewReplacer("{null}", "null", "{true}", "true", "{false}", "false"),
		function: func(hook, msg string) string {
			return fmt.Sprintf("function %s(request) {\n  throw new Error(%s);\n}\n", hook, msg)
		},
	},
}

// stub is the source of the inline hook that takes the place of webhook w as hook of the
// controller name (KIND/NAME): comments that say where it came from and what the hook
// receives and returns, and a function of the hook's name that fails until it is written, so
// that the controller writes nothing in the meantime.
func stub(lang scripting.Language, kind, name, hook string, spec, w map[string]any) string {
	sx := syntaxes[lang]
	addr := address(w)
	var lines []string
	text := func(s string) {
		for _, l := range wrap(sx.words.Replace(s), width-len(sx.comment)-1) {
			lines = append(lines, sx.comment+" "+l)
		}
	}
	from := "the webhook " + addr
	if t, ok := w["timeout"].(string); ok {
		from += " (timeout " + oneLine(t) + ")"
	}
	text(fmt.Sprintf("hooks.%s of %s: a stub `metascript convert` wrote in place of %s. Write the hook here; "+
		"until then it fails, and a hook that fails writes nothing. It runs under the engine's hook budget "+
		"(hooks.%s.budget), not under the webhook's timeout.", hook, name, from, hook))
	request, response, note := shape(kind, hook, spec)
	lines = append(lines, sx.comment)
	text("request:")
	lines = append(lines, fieldLines(sx, request)...)
	if note != "" {
		text(note)
	}
	lines = append(lines, sx.comment)
	text("return:")
	lines = append(lines, fieldLines(sx, response)...)
	msg := fmt.Sprintf("%s: hooks.%s is a stub in place of the webhook %s", FillMeIn, hook, addr)
	return strings.Join(lines, "\n") + "\n" + sx.function(hook, strconv.Quote(msg))
}

// fieldLines writes fields as an indented two-column comment.
func fieldLines(sx syntax, fields []field) []string {
	col := 0
	for _, f := range fields {
		col = max(col, len(f.name))
	}
	indent := sx.comment + "   "
	var out []string
	for _, f := range fields {
		for i, l := range wrap(sx.words.Replace(f.doc), width-len(indent)-col-2) {
			name := ""
			if i == 0 {
				name = f.name
			}
			out = append(out, fmt.Sprintf("%s%-*s  %s", indent, col, name, l))
		}
	}
	return out
}

// address is where the webhook w sends its requests, resolved as the engine resolves it.
func address(w map[string]any) string {
	if u, ok := w["url"].(string); ok {
		return oneLine(u)
	}
	svc, ok := w["service"].(map[string]any)
	if !ok {
		return "with neither url nor service"
	}
	proto, port := "http", int64(80)
	if p, ok := svc["protocol"].(string); ok {
		proto = p
	}
	if p, ok := svc["port"].(int64); ok {
		port = p
	}
	svcName, _ := svc["name"].(string)
	ns, _ := svc["namespace"].(string)
	a := fmt.Sprintf("%s://%s.%s:%d", proto, svcName, ns, port)
	if p, ok := w["path"].(string); ok {
		a += p
	}
	return oneLine(a)
}

// oneLine keeps s from breaking out of a comment or a string: control characters become
// spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// wrap breaks text into lines of at most n characters, at spaces; a longer word stays whole.
func wrap(text string, n int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > n:
			out = append(out, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
