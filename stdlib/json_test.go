package stdlib

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"metascript.dev/metascript/stdlib/jsontext"
)

var jsonCases = []callCase{
	{fn: "json.encode", args: []any{map[string]any{"b": int64(1), "a": []any{true, nil, 1.5, "x<&>"}}},
		want: `{"a":[true,null,1.5,"x<&>"],"b":1}`},
	{fn: "json.encode", args: []any{"line\n\"q\"\u2028\x01"}, want: `"line\n\"q\"\u2028\u0001"`},
	{fn: "json.encode", args: []any{1e21}, want: `1e+21`},
	{fn: "json.encode", args: []any{map[string]any{}}, want: `{}`},
	{fn: "json.encode", args: []any{map[string]any{"a": []any{math.NaN()}}}, err: "argument 1 (value): a[0]: unsupported number NaN"},
	{fn: "json.encode", args: []any{}, err: "missing argument 1 (value)"},

	{fn: "json.decode", args: []any{`{"a": [1, 2.5, 3.0, 1e3, "s", null, true], "b": {}}`},
		want: map[string]any{"a": []any{int64(1), 2.5, int64(3), int64(1000), "s", nil, true}, "b": map[string]any{}}},
	{fn: "json.decode", args: []any{`12345678901234567890`}, want: 1.2345678901234567e19},
	{fn: "json.decode", args: []any{` "x" `}, want: "x"},
	{fn: "json.decode", args: []any{`{"a": 1`}, err: "argument 1 (text): invalid JSON"},
	{fn: "json.decode", args: []any{`{} {}`}, err: "invalid character after top-level value"},
	{fn: "json.decode", args: []any{``}, err: "invalid JSON: empty input"},
	{fn: "json.decode", args: []any{int64(1)}, err: "argument 1 (text): expected string, got int"},

	{fn: "json.indent", args: []any{map[string]any{"a": []any{int64(1)}, "b": map[string]any{}}},
		want: "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}"},
	{fn: "json.indent", args: []any{`{"z":1,"a":[1.0, 2]}`, ">", "\t"},
		want: "{\n>\t\"z\": 1,\n>\t\"a\": [\n>\t\t1.0,\n>\t\t2\n>\t]\n>}"},
	{fn: "json.indent", args: []any{[]any{"x"}}, kwargs: []Kwarg{{"indent", " "}}, want: "[\n \"x\"\n]"},
	{fn: "json.indent", args: []any{`{"a":`}, err: "argument 1 (value): invalid JSON text"},
	{fn: "json.indent", args: []any{`{}`, int64(1)}, err: "argument 2 (prefix): expected string, got int"},
	{fn: "json.indent", args: []any{[]any{math.Inf(1)}}, err: "unsupported number +Inf"},
}

// TestEncodeMatchesEncodingJSON holds the encoder to encoding/json's output byte for byte.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, int64(-7), 0.1, -0.0, 1e-7, 123456789.0, 1e20, 1e21, 5e-324, math.MaxFloat64,
		"plain", "\x00\x1f\t\b\f\r\n\\\"", "é✓😀", "bad\xffutf8", "\u2028\u2029", "<tag>&",
		[]any{}, map[string]any{}, []any{[]any{map[string]any{"k": "v"}}},
		map[string]any{"β": int64(1), "a": int64(2), "A": int64(3), "": nil},
	}
	for _, v := range values {
		for _, indent := range []string{"", "  "} {
			want, err := marshalNoHTML(v, indent)
			if err != nil {
				t.Fatal(err)
			}
			var reserved int64
			got, err := encodeJSON(v, DefaultMaxBytes, func(n int64) error { reserved = n; return nil }, "", indent)
			if err != nil {
				t.Fatalf("%#v: %v", v, err)
			}
			// Every buffer is one the encoder reserved: append never grew it unasked.
			if int64(cap(got)) != reserved {
				t.Errorf("%#v indent %q: buffer of %d bytes, last reserved %d", v, indent, cap(got), reserved)
			}
			if s, ok := v.(string); ok && jsonStringLen(s) != len(jsontext.AppendString(nil, s, false)) {
				t.Errorf("jsonStringLen(%q) = %d, want %d", s, jsonStringLen(s), len(jsontext.AppendString(nil, s, false)))
			}
			if string(got) != want {
				t.Errorf("%#v indent %q:\n got %s\nwant %s", v, indent, got, want)
			}
		}
	}
}

func marshalNoHTML(v any, indent string) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// TestJSONSizeCaps shows that values sharing sub-values cannot make json amplify past
// Env.MaxBytes: the encoder stops as soon as the output passes the cap.
func TestJSONSizeCaps(t *testing.T) {
	big := strings.Repeat("x", 1<<10)
	shared := make([]any, 1<<10)
	for i := range shared {
		shared[i] = big
	}
	nested := make([]any, 1<<10)
	for i := range nested {
		nested[i] = shared // 1 MiB of references to one 1 MiB list: 1 GiB encoded
	}
	env := &Env{MaxBytes: 1 << 20}
	for _, fn := range []string{"json.encode", "json.indent", "yaml.encode"} {
		_, err := lookup(t, fn)(env, []any{nested}, nil)
		if err == nil || !strings.Contains(err.Error(), "result too large") {
			t.Errorf("%s: got %v, want result too large", fn, err)
		}
	}
	deep := `[` + strings.Repeat(`[`, 50) + strings.Repeat(`]`, 50) + `]`
	_, err := JSON.Functions["indent"](&Env{MaxBytes: 1000}, []any{deep, "", strings.Repeat(" ", 100)}, nil)
	if err == nil || !strings.Contains(err.Error(), "result too large") {
		t.Errorf("json.indent of deep text with a wide indent: got %v, want result too large", err)
	}
}

func TestIndentedSizeBound(t *testing.T) {
	texts := []string{`{}`, `[]`, `{"a":[1,2,{"b":"x,y:{["}],"c":{}}`, `"s"`, `[[[[1]]],[2,3]]`, `{"a\"":1}`}
	for _, text := range texts {
		for _, ind := range []string{"", " ", "\t\t"} {
			var b bytes.Buffer
			if err := json.Indent(&b, []byte(text), ">>", ind); err != nil {
				t.Fatal(err)
			}
			if bound := indentedSizeBound(text, 2, len(ind)); int64(b.Len()) > bound {
				t.Errorf("%s indent %q: output %d bytes exceeds bound %d", text, ind, b.Len(), bound)
			}
		}
	}
}
