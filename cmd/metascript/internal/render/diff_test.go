package render

import (
	"slices"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	lines := func(n int, change map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if s, ok := change[i]; ok {
				b.WriteString(s)
				continue
			}
			b.WriteString("line " + string(rune('a'+i-1)) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name, a, b, want string
	}{
		{name: "equal", a: "x\n", b: "x\n", want: ""},
		{name: "created", a: "", b: "x\ny\n", want: "--- A\n+++ B\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{name: "deleted", a: "x\n", b: "", want: "--- A\n+++ B\n@@ -1,1 +0,0 @@\n-x\n"},
		{name: "one change in the middle, three lines of context", a: lines(9, nil), b: lines(9, map[int]string{5: "five\n"}),
			want: "--- A\n+++ B\n@@ -2,7 +2,7 @@\n line b\n line c\n line d\n-line e\n+five\n line f\n line g\n line h\n"},
		{name: "two changes far apart make two hunks", a: lines(20, nil), b: lines(20, map[int]string{2: "two\n", 18: "eighteen\n"}),
			want: "--- A\n+++ B\n@@ -1,5 +1,5 @@\n line a\n-line b\n+two\n line c\n line d\n line e\n" +
				"@@ -15,6 +15,6 @@\n line o\n line p\n line q\n-line r\n+eighteen\n line s\n line t\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unifiedDiff("A", "B", tt.a, tt.b); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestChangedPaths(t *testing.T) {
	want := map[string]any{"spec": map[string]any{"port": int64(80), "name": "x"}, "data": map[string]any{"k": "v"}}
	have := map[string]any{"spec": map[string]any{"port": 80.0, "name": "y", "clusterIP": "10.0.0.1"}, "data": map[string]any{"k": "v"}}
	if got := changedPaths(want, have, "", false); !slices.Equal(got, []string{"spec.name"}) {
		t.Errorf("want's keys only: %v, want [spec.name]", got)
	}
	if got := changedPaths(want, have, "", true); !slices.Equal(got, []string{"spec.clusterIP", "spec.name"}) {
		t.Errorf("both ways: %v, want [spec.clusterIP spec.name]", got)
	}
}
