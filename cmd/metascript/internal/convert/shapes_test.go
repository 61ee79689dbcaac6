package convert

import (
	"slices"
	"testing"

	"metascript.dev/metascript/engine/kinds"
)

// TestShapesAreTheEngines: what a stub says a hook receives is what the engine sends, and
// what it says the hook may return the engine takes, for every hook of every kind converted.
func TestShapesAreTheEngines(t *testing.T) {
	for _, kind := range Kinds {
		if types[kind] == nil {
			t.Errorf("types has no %s", kind)
		}
		for _, h := range kinds.Lookup(kind).Hooks {
			request, response, _ := shape(kind, h.Name, nil)
			if got := names(request); !slices.Equal(got, h.Request) {
				t.Errorf("%s hooks.%s: the stub's request fields are %q, the engine sends %q", kind, h.Name, got, h.Request)
			}
			for _, f := range names(response) {
				if !slices.Contains(h.Response, f) {
					t.Errorf("%s hooks.%s: the stub offers response field %q, the engine takes %q", kind, h.Name, f, h.Response)
				}
			}
		}
	}
}

func names(fields []field) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.name)
	}
	return out
}
