package yamlpos

import (
	"errors"
	"os"
	"testing"
)

// document is testdata/controller.yaml as the 3rd document of a file whose first two
// documents take 10 lines: it starts at line 11.
func document(t *testing.T) *Document {
	t.Helper()
	data, err := os.ReadFile("testdata/controller.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(data, 11)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPosition(t *testing.T) {
	d := document(t)
	for _, tt := range []struct {
		path string
		want Position
	}{
		{"", Position{12, 1}},
		{"apiVersion", Position{12, 1}},
		{"metadata.name", Position{14, 12}},
		{"spec.childResources[0]", Position{17, 7}},
		{"spec.childResources[0].updateStrategy.method", Position{19, 24}},
		{"spec.hooks.sync.starlark.source", Position{23, 9}},
		// Not written: the deepest field the path reaches.
		{"spec.hooks.tombstone", Position{20, 3}},
		{"spec.childResources[3].resource", Position{16, 3}},
		{"metadata.name.deeper", Position{14, 12}},
	} {
		if got := d.Position(tt.path); got != tt.want {
			t.Errorf("Position(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestSource(t *testing.T) {
	d := document(t)
	for _, tt := range []struct {
		name      string
		path      string
		line, col int
		want      Position
		exact     bool
	}{
		{"literal block", "spec.hooks.sync.starlark.source", 2, 12, Position{25, 22}, true},
		{"first line", "spec.hooks.sync.starlark.source", 1, 1, Position{24, 11}, true},
		{"a leading blank line counts", "spec.hooks.customize.javascript.source", 2, 10, Position{33, 20}, true},
		{"past the document's end", "spec.hooks.customize.javascript.source", 3, 1, Position{33, 40}, true},
		{"quoted string: the field", "spec.hooks.finalize.starlark.source", 2, 5, Position{28, 9}, false},
		{"no such field", "spec.hooks.tombstone.starlark.source", 1, 1, Position{20, 3}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, exact := d.Source(tt.path, tt.line, tt.col)
			if got != tt.want || exact != tt.exact {
				t.Errorf("Source(%q, %d, %d) = %v, %v; want %v, %v", tt.path, tt.line, tt.col, got, exact, tt.want, tt.exact)
			}
		})
	}
}

func TestSub(t *testing.T) {
	d, err := Parse([]byte("apiVersion: v1\nkind: List\nitems:\n- kind: A\n- kind: B\n  metadata: {name: b}\n"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Sub("items[1]").Position("metadata.name"), (Position{10, 14}); got != want {
		t.Errorf("items[1] metadata.name at %v, want %v", got, want)
	}
	if got, want := d.Sub("items[7]").Position("kind"), (Position{6, 1}); got != want {
		t.Errorf("a missing item is the document itself: kind at %v, want %v", got, want)
	}
}

func TestSyntaxError(t *testing.T) {
	_, err := Parse([]byte("a: b\n c: d\n"), 20)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 21 || se.Msg != "mapping values are not allowed in this context" {
		t.Errorf("Parse: %v, want a syntax error at line 21", err)
	}
}
