package hooktest

import (
	"strings"
	"testing"

	"metascript.dev/metascript/engine/protocol"
)

// TestDiffEqualsAsTheEngine: Diff finds no difference exactly where the engine finds two
// values the same, so that a case passes when the engine would take the response as the one
// it expects.
func TestDiffEqualsAsTheEngine(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"int and float of one value", int64(1), 1.0, true},
		{"Go int and float of one value", 3, 3.0, true},
		{"int and float in an object", map[string]any{"replicas": int64(2)}, map[string]any{"replicas": 2.0}, true},
		{"ints and floats in a list", []any{int64(1), 2.5}, []any{1.0, 2.5}, true},
		{"different numbers", int64(1), 1.5, false},
		{"number and string", int64(1), "1", false},
		{"objects in any key order", map[string]any{"a": int64(1), "b": "x"}, map[string]any{"b": "x", "a": 1.0}, true},
		{"object with a missing key", map[string]any{"a": nil}, map[string]any{}, false},
		{"null and absent are not equal", map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{"lists in order", []any{"a", "b"}, []any{"a", "b"}, true},
		{"lists out of order", []any{"a", "b"}, []any{"b", "a"}, false},
		{"empty list and empty object", []any{}, map[string]any{}, false},
		{"nulls", nil, nil, true},
		{"bools", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if engine := protocol.SameJSON(tt.a, tt.b); engine != tt.want {
				t.Fatalf("protocol.SameJSON(%s, %s) = %v; the table is wrong", Render(tt.a), Render(tt.b), engine)
			}
			for _, pair := range [][2]any{{tt.a, tt.b}, {tt.b, tt.a}} {
				if d := Diff(pair[0], pair[1]); (len(d) == 0) != tt.want {
					t.Errorf("Diff(%s, %s) = %q, want equal %v", Render(pair[0]), Render(pair[1]), d, tt.want)
				}
			}
		})
	}
}

func TestDiff(t *testing.T) {
	want := mustDecode(t, `{"status": {"ready": true, "count": 2},
		"children": [{"name": "a"}, {"name": "b"}], "labels": {"app.kubernetes.io/name": "web"}}`)
	tests := []struct {
		name string
		got  string
		want []string
	}{
		{name: "equal, 2.0 for 2", got: `{"status": {"count": 2.0, "ready": true}, "children": [{"name": "a"}, {"name": "b"}], "labels": {"app.kubernetes.io/name": "web"}}`},
		{name: "every kind of difference", got: `{"status": {"ready": "yes", "extra": 1},
			"children": [{"name": "a"}, {"name": "c"}, {"name": "d"}], "labels": {"app.kubernetes.io/name": "db"}}`,
			want: []string{
				`children: want 2 items, got 3`,
				`children[1].name: want "b", got "c"`,
				`children[2]: unexpected {"name":"d"}`,
				`labels["app.kubernetes.io/name"]: want "web", got "db"`,
				`status.count: missing (want 2)`,
				`status.extra: unexpected 1`,
				`status.ready: want true, got "yes"`,
			}},
		{name: "shorter list", got: `{"status": {"ready": true, "count": 2}, "children": [{"name": "a"}], "labels": {"app.kubernetes.io/name": "web"}}`,
			want: []string{`children: want 2 items, got 1`, `children[1]: missing (want {"name":"b"})`}},
		{name: "type change", got: `{"status": [], "children": [{"name": "a"}, {"name": "b"}], "labels": {"app.kubernetes.io/name": "web"}}`,
			want: []string{`status: want {"count":2,"ready":true}, got []`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(want, mustDecode(t, tt.got))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	if d := Diff("a", "b"); len(d) != 1 || d[0] != `(the whole response): want "a", got "b"` {
		t.Errorf("Diff at the root: %q", d)
	}
}

func TestRenderShortens(t *testing.T) {
	long := strings.Repeat("x", 500)
	got := Render(long)
	if len(got) > renderLimit+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("Render of 500 bytes gave %d bytes: %q", len(got), got)
	}
	if got := Render(map[string]any{"a": "<b>"}); got != `{"a":"<b>"}` {
		t.Errorf("Render escapes HTML: %s", got)
	}
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := DecodeValue([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
