package convert

import (
	"testing"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
)

func TestPositionsLine(t *testing.T) {
	const stream = `# leading comment
---
# the document's own comment
apiVersion: v1
kind: List
items:
- kind: ConfigMap
- kind: CompositeController
  spec:
    hooks:
      sync: &hook
        webhook: {url: "http://x/sync", etag: {enabled: true}}
      finalize: *hook
---
{"kind": "CompositeController",
 "spec": {"resyncPeriod": 30}}
`
	docs := manifest.Documents([]byte(stream))
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3", len(docs))
	}
	list, json := newPositions(docs[1]), newPositions(docs[2])
	tests := []struct {
		name string
		p    *positions
		at   path
		want int
	}{
		{"the document", list, nil, 4},
		{"a key", list, path{"items"}, 6},
		{"a list item", list, path{"items", 1}, 8},
		{"a key in a list item", list, path{"items", 1, "spec", "hooks", "sync"}, 11},
		{"a key of a flow mapping", list, path{"items", 1, "spec", "hooks", "sync", "webhook", "etag"}, 12},
		{"through an alias", list, path{"items", 1, "spec", "hooks", "finalize", "webhook"}, 12},
		{"a missing key: the nearest enclosing one", list, path{"items", 1, "spec", "nope", "deeper"}, 9},
		{"an index out of range", list, path{"items", 5}, 6},
		{"JSON", json, path{"spec", "resyncPeriod"}, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.line(tt.at); got != tt.want {
				t.Errorf("line(%v) = %d, want %d", tt.at, got, tt.want)
			}
		})
	}
}

func TestPathString(t *testing.T) {
	if got := (path{"spec", "childResources", 0, "updateStrategy", "method"}).String(); got != "spec.childResources[0].updateStrategy.method" {
		t.Errorf("got %q", got)
	}
}
