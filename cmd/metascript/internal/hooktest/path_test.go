package hooktest

import (
	"strings"
	"testing"

	"metascript.dev/metascript/engine/protocol"
)

var doc = map[string]any{
	"children": []any{
		map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"app.kubernetes.io/name": "web"}}},
		map[string]any{"metadata": map[string]any{"name": "b"}},
	},
	"status":      map[string]any{"ready": true, "count": int64(2), "note": nil},
	"$ref":        "dollar",
	"with space":  "spaced",
	"quote'd key": "q",
}

func TestPathLookup(t *testing.T) {
	tests := []struct {
		path        string
		want        any
		wantMissing string // non-empty: the path is absent and this is the reason
		canonical   string // what String writes back
	}{
		{path: "status.ready", want: true, canonical: "status.ready"},
		{path: "$.status.ready", want: true, canonical: "status.ready"},
		{path: ".status.count", want: int64(2), canonical: "status.count"},
		{path: "status.note", want: nil, canonical: "status.note"},
		{path: "children[0].metadata.name", want: "a", canonical: "children[0].metadata.name"},
		{path: "children[-1].metadata.name", want: "b", canonical: "children[-1].metadata.name"},
		{path: `children[0].metadata.labels["app.kubernetes.io/name"]`, want: "web",
			canonical: `children[0].metadata.labels["app.kubernetes.io/name"]`},
		{path: `children[0].metadata.labels['app.kubernetes.io/name']`, want: "web",
			canonical: `children[0].metadata.labels["app.kubernetes.io/name"]`},
		{path: `["$ref"]`, want: "dollar", canonical: `["$ref"]`},
		{path: `["with space"]`, want: "spaced", canonical: `["with space"]`},
		{path: `['quote\'d key']`, want: "q", canonical: `["quote'd key"]`},
		{path: "", want: doc, canonical: ""},
		{path: "$", want: doc, canonical: ""},
		{path: "children[2]", wantMissing: "children has 2 items, no [2]", canonical: "children[2]"},
		{path: "children[-3]", wantMissing: "children has 2 items, no [-3]", canonical: "children[-3]"},
		{path: "status.phase", wantMissing: "status has no field phase", canonical: "status.phase"},
		{path: "status.ready.value", wantMissing: "status.ready is a boolean, not an object", canonical: "status.ready.value"},
		{path: "status[0]", wantMissing: "status is an object, not a list", canonical: "status[0]"},
		{path: "nothing", wantMissing: "the response has no field nothing", canonical: "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := ParsePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tt.canonical {
				t.Errorf("String() = %q, want %q", got, tt.canonical)
			}
			v, found, missing := p.Lookup(doc)
			if tt.wantMissing != "" {
				if found || missing != tt.wantMissing {
					t.Errorf("found=%v missing=%q, want absent because %q", found, missing, tt.wantMissing)
				}
				return
			}
			if !found || !protocol.SameJSON(v, tt.want) {
				t.Errorf("Lookup = %v, %v (%s); want %v", Render(v), found, missing, Render(tt.want))
			}
		})
	}
}

func TestParsePathErrors(t *testing.T) {
	tests := map[string]string{
		"children[0":       "unclosed [",
		"children[]":       "empty []",
		"children[*].name": "wildcards are not supported",
		"children[x]":      "expected an index or a quoted key",
		"a..b":             "empty field name",
		"a.":               "empty field name",
		"a]":               "unexpected ]",
		`a["unterminated]`: "unclosed [",
		`a["bad\q"]`:       "bad quoted key",
		"children[0]name":  "expected . or [",
	}
	for path, want := range tests {
		t.Run(path, func(t *testing.T) {
			_, err := ParsePath(path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ParsePath(%q) error = %v, want one containing %q", path, err, want)
			}
		})
	}
}
