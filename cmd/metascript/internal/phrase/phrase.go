// Package phrase words what the metascript command says the same way in every message and
// help text: counts, alternatives, the JSON type of a value.
package phrase

import (
	"fmt"
	"strings"
)

// Count is n and the noun, plural unless n is 1: "1 hook", "2 hooks".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Either joins alternatives: "a", "a or b", "a, b or c".
func Either(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// ExactlyOne returns nil when one of choices is set, else an error that lists choices and
// what is set: "exactly one of a, b or c must be set, got 2 (a, c)".
func ExactlyOne(choices, set []string) error {
	if len(set) == 1 {
		return nil
	}
	got := fmt.Sprint(len(set))
	if len(set) > 0 {
		got += " (" + strings.Join(set, ", ") + ")"
	}
	return fmt.Errorf("exactly one of %s must be set, got %s", Either(choices), got)
}

// TypeOf names the JSON type of a decoded JSON value, with its article: "an object",
// "a list", "a string", "a boolean", "a number" or "null".
func TypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64, int:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
