package starlark

import (
	"errors"
	"fmt"
	"testing"

	"metascript.dev/metascript/scripting"
)

// TestSyntaxErrorPositions: a syntax error is located at the first character of the token
// the parser stopped at, counting characters, not bytes.
func TestSyntaxErrorPositions(t *testing.T) {
	cases := []struct {
		name, src string
		want      string // line:col
	}{
		{"keyword", "def sync(r):\n    x = [1,\n    return x\n", "3:5"},
		{"int literal", "def sync(r):\n    return [1, 2 3]\n", "2:18"},
		{"float literal", "def sync(r):\n    return [1, 2 3.5]\n", "2:18"},
		{"identifier", "def sync(r):\n    for x y in r:\n        pass\n", "2:11"},
		{"string literal", "def sync(r):\n    return [1, 2 'a']\n", "2:18"},
		{"raw string with escaped quote", "def sync(r):\n    return [1, 2 r'a\\'b']\n", "2:18"},
		{"string over two lines", "def sync(r):\n    return [1, 2 '''a\nb''']\n", "2:18"},
		{"string after a comment with a quote", "# it's\nx = [1 'a']\n", "2:8"},
		{"int literal in a dict", "def sync(r):\n    return {1: 2 3}\n", "2:18"},
		{"punctuation", "def sync(r) = 1\n", "1:13"},
		{"missing colon at end of line", "def sync(r)\n    return 1\n", "1:12"},
		{"non-associative operator", "def sync(r):\n    return 1 < 2 < 3\n", "2:18"},
		{"after non-ASCII text", "def sync(r):\n    return ['é', 2 3]\n", "2:20"},
		{"already at the token", "def sync(r):\n    x = = 1\n", "2:9"},
		{"unindented body", "def sync(r):\nreturn 1\n", "2:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewCompiler().Compile("f", c.src)
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
