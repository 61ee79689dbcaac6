package hooktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/protocol"
)

// Assertion checks one value of a hook response. Path uses the syntax of Path; exactly one
// check is set:
//
//	equals: V      the value equals V as the engine compares JSON values (null included;
//	               numbers by value, so 3 equals 3.0)
//	exists: B      the path is present (true) or absent (false)
//	length: N      a list's items, an object's keys or a string's characters number N
//	contains: V    a string holds the substring V; a list holds an item equal to V; an object
//	               holds every key of the object V with an equal value
//	matches: RE    a string matches the RE2 regular expression RE (unanchored)
type Assertion struct {
	Path     string          `json:"path"`
	Equals   json.RawMessage `json:"equals,omitempty"`
	Exists   *bool           `json:"exists,omitempty"`
	Length   *int            `json:"length,omitempty"`
	Contains json.RawMessage `json:"contains,omitempty"`
	Matches  *string         `json:"matches,omitempty"`

	path     Path
	equals   any
	contains any
	re       *regexp.Regexp
}

// compile parses the path and the operand, and checks that exactly one check is set.
func (a *Assertion) compile() error {
	var err error
	if a.path, err = ParsePath(a.Path); err != nil {
		return err
	}
	var set []string
	if a.Equals != nil {
		set = append(set, "equals")
		if a.equals, err = hooks.DecodeJSON(a.Equals); err != nil {
			return fmt.Errorf("equals: %v", err)
		}
	}
	if a.Exists != nil {
		set = append(set, "exists")
	}
	if a.Length != nil {
		set = append(set, "length")
	}
	if a.Contains != nil {
		set = append(set, "contains")
		if a.contains, err = hooks.DecodeJSON(a.Contains); err != nil {
			return fmt.Errorf("contains: %v", err)
		}
	}
	if a.Matches != nil {
		set = append(set, "matches")
		if a.re, err = regexp.Compile(*a.Matches); err != nil {
			return fmt.Errorf("matches: %v", err)
		}
	}
	if err := phrase.ExactlyOne([]string{"equals", "exists", "length", "contains", "matches"}, set); err != nil {
		return fmt.Errorf("path %s: %w", a.Path, err)
	}
	return nil
}

// Check returns nil when the assertion holds on doc, else an error that says what was found.
func (a *Assertion) Check(doc any) error {
	v, found, missing := a.path.Lookup(doc)
	where := a.path.stringOr("(the whole response)")
	if a.Exists != nil {
		switch {
		case *a.Exists && !found:
			return fmt.Errorf("%s: want it to exist, but %s", where, missing)
		case !*a.Exists && found:
			return fmt.Errorf("%s: want it absent, got %s", where, Render(v))
		}
		return nil
	}
	if !found {
		return errors.New(where + ": " + missing)
	}
	switch {
	case a.Equals != nil:
		if !protocol.SameJSON(a.equals, v) {
			return fmt.Errorf("%s: want %s, got %s", where, Render(a.equals), Render(v))
		}
	case a.Length != nil:
		n, ok := length(v)
		if !ok {
			return fmt.Errorf("%s: want length %d, but it is %s %s", where, *a.Length, phrase.TypeOf(v), Render(v))
		}
		if n != *a.Length {
			return fmt.Errorf("%s: want length %d, got %d: %s", where, *a.Length, n, Render(v))
		}
	case a.Contains != nil:
		return contains(where, v, a.contains)
	case a.re != nil:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string matching %s, got %s", where, Render(*a.Matches), Render(v))
		}
		if !a.re.MatchString(s) {
			return fmt.Errorf("%s: %s does not match %s", where, Render(s), Render(*a.Matches))
		}
	}
	return nil
}

func length(v any) (int, bool) {
	switch t := v.(type) {
	case []any:
		return len(t), true
	case map[string]any:
		return len(t), true
	case string:
		return utf8.RuneCountInString(t), true
	}
	return 0, false
}

func contains(where string, v, want any) error {
	switch t := v.(type) {
	case string:
		sub, ok := want.(string)
		if !ok {
			return fmt.Errorf("%s: is a string; contains needs a string, got %s", where, Render(want))
		}
		if !strings.Contains(t, sub) {
			return fmt.Errorf("%s: %s does not contain %s", where, Render(t), Render(sub))
		}
	case []any:
		for _, item := range t {
			if protocol.SameJSON(item, want) {
				return nil
			}
		}
		return fmt.Errorf("%s: no item equals %s; got %s", where, Render(want), Render(t))
	case map[string]any:
		sub, ok := want.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: is an object; contains needs an object, got %s", where, Render(want))
		}
		for k, wv := range sub {
			gv, ok := t[k]
			if !ok || !protocol.SameJSON(wv, gv) {
				return fmt.Errorf("%s: want %s: %s, got %s", where, quoteKey(k), Render(wv), Render(t))
			}
		}
	default:
		return fmt.Errorf("%s: contains needs a string, list or object, got %s", where, Render(v))
	}
	return nil
}
