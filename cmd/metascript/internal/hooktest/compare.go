package hooktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/protocol"
)

// Diff lists the differences between want and got, one line per differing path, in a stable
// order: `children[0].metadata.name: want "a", got "b"`, `status.ready: missing (want true)`,
// `children[2]: unexpected {"kind":"Secret",...}`. It returns nil when want and got are equal
// as the engine compares JSON values (protocol.SameJSON: numbers by value, so 2 and 2.0 are
// equal).
func Diff(want, got any) []string {
	var out []string
	diff(Path{}, want, got, &out)
	return out
}

func diff(at Path, want, got any, out *[]string) {
	where := at.stringOr("(the whole response)")
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			wv, inWant := w[k]
			gv, inGot := g[k]
			switch {
			case !inGot:
				*out = append(*out, fmt.Sprintf("%s: missing (want %s)", at.appendKey(k), Render(wv)))
			case !inWant:
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", at.appendKey(k), Render(gv)))
			default:
				diff(at.appendKey(k), wv, gv, out)
			}
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		if len(w) != len(g) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %d", where, phrase.Count(len(w), "item"), len(g)))
		}
		for i := 0; i < max(len(w), len(g)); i++ {
			switch {
			case i >= len(g):
				*out = append(*out, fmt.Sprintf("%s: missing (want %s)", at.appendIndex(i), Render(w[i])))
			case i >= len(w):
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", at.appendIndex(i), Render(g[i])))
			default:
				diff(at.appendIndex(i), w[i], g[i], out)
			}
		}
		return
	}
	if !protocol.SameJSON(want, got) {
		*out = append(*out, fmt.Sprintf("%s: want %s, got %s", where, Render(want), Render(got)))
	}
}

// renderLimit keeps one rendered value to a readable line.
const renderLimit = 120

// Render writes v as compact JSON, shortened past renderLimit bytes.
func Render(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(bytes.TrimRight(b.Bytes(), "\n"))
	if len(s) > renderLimit {
		return s[:renderLimit] + "…"
	}
	return s
}
