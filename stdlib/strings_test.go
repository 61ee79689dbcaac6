package stdlib

import (
	"strings"
	"testing"
)

var stringsCases = []callCase{
	{fn: "strings.has_prefix", args: []any{"web-0", "web"}, want: true},
	{fn: "strings.has_prefix", args: []any{"web-0", "db"}, want: false},
	{fn: "strings.has_prefix", args: []any{"web-0", nil}, err: "argument 2 (prefix): expected string, got null"},
	{fn: "strings.has_suffix", args: []any{"web-0", "-0"}, want: true},
	{fn: "strings.has_suffix", args: []any{int64(0), "-0"}, err: "argument 1 (s): expected string, got int"},
	{fn: "strings.contains", args: []any{"seafood", "foo"}, want: true},
	{fn: "strings.contains", args: []any{"seafood", "bar"}, want: false},
	{fn: "strings.contains", args: []any{"seafood"}, err: "missing argument 2 (substr)"},
	{fn: "strings.contains_any", args: []any{"failure", "uix"}, want: true},
	{fn: "strings.contains_any", args: []any{"foo", ""}, want: false},
	{fn: "strings.contains_any", args: []any{"foo", []any{"o"}}, err: "argument 2 (chars): expected string, got list"},
	{fn: "strings.count", args: []any{"cheese", "e"}, want: int64(3)},
	{fn: "strings.count", args: []any{"héllo", ""}, want: int64(6)},
	{fn: "strings.count", args: []any{"cheese", 1.5}, err: "expected string, got float"},
	{fn: "strings.equal_fold", args: []any{"Straße", "STRASSE"}, want: false},
	{fn: "strings.equal_fold", args: []any{"Go", "GO"}, want: true},
	{fn: "strings.equal_fold", args: []any{"Go", true}, err: "argument 2 (b): expected string, got bool"},
	{fn: "strings.lower", args: []any{"ÀB"}, want: "àb"},
	{fn: "strings.lower", args: []any{nil}, err: "expected string, got null"},
	{fn: "strings.upper", args: []any{"àb"}, want: "ÀB"},
	{fn: "strings.upper", args: []any{int64(1)}, err: "expected string, got int"},
	{fn: "strings.trim_space", args: []any{" \t\n x y \u00a0"}, want: "x y"},
	{fn: "strings.trim_space", args: []any{}, err: "missing argument 1 (s)"},
	{fn: "strings.trim", args: []any{"xx-a-xx", "x-"}, want: "a"},
	{fn: "strings.trim", args: []any{"a", int64(1)}, err: "argument 2 (cutset)"},
	{fn: "strings.trim_left", args: []any{"xx-a-xx", "x"}, want: "-a-xx"},
	{fn: "strings.trim_left", args: []any{nil, "x"}, err: "argument 1 (s)"},
	{fn: "strings.trim_right", args: []any{"xx-a-xx", "x"}, want: "xx-a-"},
	{fn: "strings.trim_right", args: []any{"x", nil}, err: "argument 2 (cutset)"},
	{fn: "strings.trim_prefix", args: []any{"prefix-name", "prefix-"}, want: "name"},
	{fn: "strings.trim_prefix", args: []any{"name", "prefix-"}, want: "name"},
	{fn: "strings.trim_prefix", args: []any{"name", false}, err: "argument 2 (prefix): expected string, got bool"},
	{fn: "strings.trim_suffix", args: []any{"a.yaml", ".yaml"}, want: "a"},
	{fn: "strings.trim_suffix", args: []any{"a.yaml"}, err: "missing argument 2 (suffix)"},

	{fn: "strings.split", args: []any{"a,b,,c", ","}, want: []any{"a", "b", "", "c"}},
	{fn: "strings.split", args: []any{"a,b,c", ",", int64(2)}, want: []any{"a", "b,c"}},
	{fn: "strings.split", args: []any{"a,b", ",", int64(0)}, want: []any{}},
	{fn: "strings.split", args: []any{"hé", ""}, want: []any{"h", "é"}},
	{fn: "strings.split", args: []any{"", ","}, want: []any{""}},
	{fn: "strings.split", args: []any{"a", ",", "2"}, err: "argument 3 (n): expected int, got string"},
	{fn: "strings.fields", args: []any{"  a \t b\nc  "}, want: []any{"a", "b", "c"}},
	{fn: "strings.fields", args: []any{"   "}, want: []any{}},
	{fn: "strings.fields", args: []any{[]any{}}, err: "expected string, got list"},
	{fn: "strings.cut", args: []any{"key=value=x", "="}, want: []any{"key", "value=x", true}},
	{fn: "strings.cut", args: []any{"key", "="}, want: []any{"key", "", false}},
	{fn: "strings.cut", args: []any{"key", int64(1)}, err: "argument 2 (sep)"},
	{fn: "strings.join", args: []any{[]any{"a", "b", "c"}, ", "}, want: "a, b, c"},
	{fn: "strings.join", args: []any{[]any{}, ","}, want: ""},
	{fn: "strings.join", args: []any{[]any{"a", int64(1)}, ","}, err: "argument 1 (parts): element 1: expected string, got int"},
	{fn: "strings.join", args: []any{"abc", ","}, err: "argument 1 (parts): expected list, got string"},
	{fn: "strings.replace", args: []any{"oink oink oink", "k", "ky"}, want: "oinky oinky oinky"},
	{fn: "strings.replace", args: []any{"oink oink oink", "oink", "moo", int64(2)}, want: "moo moo oink"},
	{fn: "strings.replace", args: []any{"ab", "", "-"}, want: "-a-b-"},
	{fn: "strings.replace", args: []any{"ab", "a"}, err: "missing argument 3 (new)"},
	{fn: "strings.repeat", args: []any{"ab", int64(3)}, want: "ababab"},
	{fn: "strings.repeat", args: []any{"ab", int64(0)}, want: ""},
	{fn: "strings.repeat", args: []any{"ab", int64(-1)}, err: "argument 2 (count): must not be negative, got -1"},
	{fn: "strings.repeat", args: []any{"ab", int64(1) << 40}, err: "result too large"},
	{fn: "strings.length", args: []any{"héllo😀"}, want: int64(6)},
	{fn: "strings.length", args: []any{""}, want: int64(0)},
	{fn: "strings.length", args: []any{int64(3)}, err: "expected string, got int"},
}

// TestStringsSizeCaps: amplifying calls fail before allocating past Env.MaxBytes.
func TestStringsSizeCaps(t *testing.T) {
	env := &Env{MaxBytes: 1 << 20}
	kb := strings.Repeat("x", 1<<10)
	parts := make([]any, 2<<10)
	for i := range parts {
		parts[i] = kb
	}
	cases := []struct {
		fn   string
		args []any
	}{
		{"strings.join", []any{parts, ""}},
		{"strings.replace", []any{kb + "x", "x", kb}},
		{"strings.replace", []any{kb, "", kb}},
		{"strings.repeat", []any{kb, int64(2 << 10)}},
	}
	for _, c := range cases {
		_, err := lookup(t, c.fn)(env, c.args, nil)
		if err == nil || !strings.Contains(err.Error(), "result too large: more than 1048576 bytes") {
			t.Errorf("%s: got %v, want result too large", c.fn, err)
		}
	}
	// Just under the cap is fine.
	got, err := Strings.Functions["repeat"](env, []any{kb, int64(1 << 10)}, nil)
	if err != nil || len(got.(string)) != 1<<20 {
		t.Errorf("repeat to exactly MaxBytes: %v", err)
	}
}
