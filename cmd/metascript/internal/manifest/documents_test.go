package manifest

import (
	"testing"
)

func TestDocuments(t *testing.T) {
	const stream = "# header\n---\n\n# about a\nkind: A\n---\nkind: [\n---\n# only a comment\n"
	docs := Documents([]byte(stream))
	want := []struct {
		line, start int
		text, kind  string
		err         bool
	}{
		{line: 2, start: 1, text: "# header\n"},
		{line: 5, start: 3, text: "\n# about a\nkind: A\n", kind: "A"},
		{line: 7, start: 7, text: "kind: [\n", err: true},
		{line: 10, start: 9, text: "# only a comment\n"},
	}
	if len(docs) != len(want) {
		t.Fatalf("%d documents, want %d: %+v", len(docs), len(want), docs)
	}
	for i, w := range want {
		d := docs[i]
		obj, _ := d.Value.(map[string]any)
		kind, _ := obj["kind"].(string)
		if d.Line != w.line || d.Start != w.start || string(d.Text) != w.text || kind != w.kind || (d.Err != nil) != w.err {
			t.Errorf("document %d: line %d, start %d, text %q, kind %q, error %v; want %d, %d, %q, %q, error %v",
				i, d.Line, d.Start, d.Text, kind, d.Err, w.line, w.start, w.text, w.kind, w.err)
		}
	}
}
