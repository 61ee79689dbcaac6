package javascript

import "github.com/dop251/goja"

// JSON.parse recurses in Go once per level of nesting of its text: the guard refuses text
// nested deeper than MaxJSONParseDepth with a TypeError before goja parses it.
// JSON.stringify has a family of its own (guard_stringify.go).

func init() { registerGuards("json", (*hardRuntime).installJSONParseGuard) }

// MaxJSONParseDepth bounds the nesting of text given to JSON.parse.
const MaxJSONParseDepth = 1000

func (h *hardRuntime) installJSONParseGuard() {
	rt := h.rt
	h.wrap(h.global.Get("JSON").(*goja.Object), "parse", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
		text := c.Argument(0).ToString()
		if d := jsonDepth(text.String()); d > MaxJSONParseDepth {
			panic(rt.NewTypeError("JSON.parse: text nests deeper than %d levels", MaxJSONParseDepth))
		}
		args := append([]goja.Value{text}, c.Arguments[min(1, len(c.Arguments)):]...)
		return call(orig, c.This, args...)
	})
}

// jsonDepth is the maximum nesting of brackets in JSON text, outside strings.
func jsonDepth(s string) int {
	depth, maxDepth := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{':
			depth++
			maxDepth = max(maxDepth, depth)
		case ']', '}':
			depth--
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		}
	}
	return maxDepth
}
