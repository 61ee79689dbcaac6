package stdlib

import "math"

var yamlCases = []callCase{
	{fn: "yaml.encode", args: []any{map[string]any{"b": []any{int64(1), "two"}, "a": map[string]any{"x": nil}}},
		want: "a:\n  x: null\nb:\n- 1\n- two\n"},
	{fn: "yaml.encode", args: []any{"yes"}, want: "\"yes\"\n"},
	{fn: "yaml.encode", args: []any{math.NaN()}, err: "argument 1 (value): value: unsupported number NaN"},
	{fn: "yaml.encode", args: []any{}, err: "missing argument 1 (value)"},

	{fn: "yaml.decode", args: []any{"a: 1\nb: [2.5, 3.0, x]\nc:\n  d: true\ne: null\n"},
		want: map[string]any{"a": int64(1), "b": []any{2.5, int64(3), "x"}, "c": map[string]any{"d": true}, "e": nil}},
	{fn: "yaml.decode", args: []any{""}, want: nil},
	{fn: "yaml.decode", args: []any{"- 1\n- '2'\n"}, want: []any{int64(1), "2"}},
	{fn: "yaml.decode", args: []any{"a: 1\na: 2\n"}, err: "argument 1 (text): invalid YAML"},
	{fn: "yaml.decode", args: []any{"a: [1"}, err: "invalid YAML"},
	{fn: "yaml.decode", args: []any{"a: 1\n---\nb: 2\n"}, err: "argument 1 (text): invalid YAML: several documents"},
	{fn: "yaml.decode", args: []any{"a: 1\n---\nb: [\n"}, err: "invalid YAML: several documents"},
	{fn: "yaml.decode", args: []any{"---\na: 1\n"}, want: map[string]any{"a": int64(1)}},
	{fn: "yaml.decode", args: []any{"a: 1\n---\n"}, want: map[string]any{"a": int64(1)}},
	{fn: "yaml.decode", args: []any{"---\n---\na: 1\n"}, err: "several documents"},
	{fn: "yaml.decode", args: []any{"1: a\ntrue: b\n"}, want: map[string]any{"1": "a", "true": "b"}},
	{fn: "yaml.decode", args: []any{[]any{}}, err: "argument 1 (text): expected string, got list"},
}
