package docs_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"metascript.dev/metascript/engine/kinds"
)

// hookRow is a row of a reference page's hooks table:
// | `sync` | yes | `controller`, `parent` | `status`, `children` |
var hookRow = regexp.MustCompile("^\\| `([a-z]+)` \\| (yes|no) \\| ([^|]*) \\| ([^|]*) \\|$")

var backticked = regexp.MustCompile("`([^`]+)`")

// TestReferenceHooks fails when a kind's reference page lists other hooks, or other request
// and response fields, than the kind's descriptor, which the engine and the offline commands
// validate against.
func TestReferenceHooks(t *testing.T) {
	for _, kind := range kinds.All {
		if strings.HasPrefix(kind.Kind, "Namespaced") {
			continue // the same hooks as their twins; namespaced.md says so
		}
		page := filepath.Join("docs", "reference", strings.ToLower(kind.Kind)+".md")
		rows := map[string][]string{}
		for _, line := range proseLines(read(t, page)) {
			if m := hookRow.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				rows[m[1]] = m[2:]
			}
		}
		for _, h := range kind.Hooks {
			row, ok := rows[h.Name]
			if !ok {
				t.Errorf("%s: no row for the %s hook", page, h.Name)
				continue
			}
			delete(rows, h.Name)
			if want := map[bool]string{true: "yes", false: "no"}[h.Required]; row[0] != want {
				t.Errorf("%s: %s hook: required %q, want %q", page, h.Name, row[0], want)
			}
			if got := words(row[1]); !slices.Equal(got, h.Request) {
				t.Errorf("%s: %s hook: request %v, want %v", page, h.Name, got, h.Request)
			}
			if got := words(row[2]); !slices.Equal(got, h.Response) {
				t.Errorf("%s: %s hook: response %v, want %v", page, h.Name, got, h.Response)
			}
		}
		for name := range rows {
			t.Errorf("%s: a row for the %s hook, which %s does not have", page, name, kind.Kind)
		}
	}
}

// words are the backticked words of a cell, in order.
func words(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}
