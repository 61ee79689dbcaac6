package protocol

import "fmt"

// The JSON values hooks exchange: objects are map[string]any, lists []any, numbers int64 or
// float64 (a cached object's integers are int64, a hook's answer may hold float64 for the
// same number), and strings, booleans and null as Go has them.

// SameJSON reports whether two JSON-shaped values are equal as JSON: numbers compare by
// value, so the int64 the cache holds equals the float64 a hook returned for the same number.
// It allocates nothing, since every reconcile that writes a status calls it.
func SameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for key, v := range x {
			w, ok := y[key]
			if !ok || !SameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !SameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if n, ok := number(a); ok {
		m, ok := number(b)
		return ok && n == m
	}
	return a == b
}

// number returns a JSON number as float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// TypeName names the JSON type of v for messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64, int:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
