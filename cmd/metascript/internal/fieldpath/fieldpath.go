// Package fieldpath reads the field paths the API server's validation names
// (spec.childResources[0].updateStrategy.method, metadata.labels[app.kubernetes.io/name])
// and finds, or removes, what they point at in a decoded JSON object.
package fieldpath

import (
	"strconv"
	"strings"
)

// Step is one step of a path: a key of an object, or, when Subscript is set, a subscript that is
// a list index or, on an object, a key (Key holds the subscript's text either way).
type Step struct {
	Key       string
	Subscript bool
}

// Parse splits path at its dots and subscripts; dots inside a subscript belong to it.
func Parse(path string) []Step {
	var steps []Step
	for i := 0; i < len(path); {
		switch path[i] {
		case '.':
			i++
		case '[':
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return append(steps, Step{Key: path[i+1:], Subscript: true})
			}
			steps = append(steps, Step{Key: path[i+1 : i+end], Subscript: true})
			i += end + 1
		default:
			end := strings.IndexAny(path[i:], ".[")
			if end < 0 {
				end = len(path) - i
			}
			steps = append(steps, Step{Key: path[i : i+end]})
			i += end
		}
	}
	return steps
}

// Index is the step as a list index, or -1 when it is not a subscript of digits.
func (s Step) Index() int {
	if !s.Subscript {
		return -1
	}
	n, err := strconv.Atoi(s.Key)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// Get returns the value path points at in v, and whether there is one.
func Get(v any, path []Step) (any, bool) {
	for _, s := range path {
		switch t := v.(type) {
		case map[string]any:
			e, ok := t[s.Key]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i := s.Index()
			if i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Delete removes the object key path points at from v and reports whether it did. A list
// element is not removed (that would renumber its siblings): it is set to nil.
func Delete(v any, path []Step) bool {
	if len(path) == 0 {
		return false
	}
	parent, ok := Get(v, path[:len(path)-1])
	if !ok {
		return false
	}
	last := path[len(path)-1]
	switch t := parent.(type) {
	case map[string]any:
		if _, ok := t[last.Key]; ok {
			delete(t, last.Key)
			return true
		}
	case []any:
		if i := last.Index(); i >= 0 && i < len(t) {
			t[i] = nil
			return true
		}
	}
	return false
}

// Within reports whether path is at or under ancestor: spec.hooks.sync.budget is within
// spec.hooks.sync and within itself, spec.hooksync is not within spec.hooks.
func Within(path, ancestor string) bool {
	if !strings.HasPrefix(path, ancestor) {
		return false
	}
	rest := path[len(ancestor):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}
