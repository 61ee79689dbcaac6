package javascript

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"metascript.dev/metascript/scripting"
)

// TestSyntaxErrorPositions: a syntax error is located at the first character of the token
// it names, counting characters, not bytes.
func TestSyntaxErrorPositions(t *testing.T) {
	cases := []struct {
		name, src string
		want      string // line:col
	}{
		{"unexpected token", "function sync(r) {\n  for (const x of r.parent {\n  }\n}\n", "2:28"},
		{"second comma in an object literal", "function sync(r) {\n  return {a: 1,, b};\n}\n", "2:16"},
		{"empty property in an object literal", "function sync(r) {\n  return {a, , b};\n}\n", "2:14"},
		{"unexpected number", "function sync(r) {\n  return f(1 2);\n}\n", "2:14"},
		{"after non-ASCII text", "function sync(r) {\n  return 'é—' 2;\n}\n", "2:15"},
		{"after a tab", "function sync(r) {\n\treturn r r;\n}\n", "2:11"},
		{"first line", "let o = {a: 1,, b};\n", "1:15"},
		{"redeclared, found by the compiler", "let é = 1;\nlet x = 1; let x = 2;\n", "2:16"},
		{"nesting limit", "x = '" + strings.Repeat("é", 5) + "' + " + strings.Repeat("[", MaxNesting+1), "1:" + fmt.Sprint(13+MaxNesting)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compiler{}.Compile("f", c.src)
			var ce *scripting.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *scripting.CompileError", err)
			}
			if got := fmt.Sprintf("%d:%d", ce.Line, ce.Column); got != c.want {
				t.Errorf("got %s (%s), want %s", got, ce.Msg, c.want)
			}
		})
	}
}
