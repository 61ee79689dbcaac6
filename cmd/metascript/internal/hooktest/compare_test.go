package hooktest

import (
	"strings"
	"testing"
)

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
