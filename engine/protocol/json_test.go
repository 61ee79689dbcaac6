package protocol

import "testing"

func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"int and float of one value", int64(1), 1.0, true},
		{"different numbers", int64(1), 1.5, false},
		{"number and string", int64(1), "1", false},
		{"numbers inside objects and lists", map[string]any{"n": int64(3), "l": []any{"x", 1.5}},
			map[string]any{"n": 3.0, "l": []any{"x", 1.5}}, true},
		{"objects in any key order", map[string]any{"a": int64(1), "b": "x"}, map[string]any{"b": "x", "a": 1.0}, true},
		{"a different value", map[string]any{"n": int64(3)}, map[string]any{"n": int64(4)}, false},
		{"a different key", map[string]any{"n": int64(3)}, map[string]any{"m": int64(3)}, false},
		{"a key more, null", map[string]any{"n": int64(3)}, map[string]any{"n": int64(3), "m": nil}, false},
		{"null and absent", map[string]any{"a": nil}, map[string]any{}, false},
		{"lists in order", []any{"a", "b"}, []any{"a", "b"}, true},
		{"lists out of order", []any{"a", "b"}, []any{"b", "a"}, false},
		{"a list longer", []any{"a"}, []any{"a", "b"}, false},
		{"empty list and empty object", []any{}, map[string]any{}, false},
		{"nulls", nil, nil, true},
		{"bools", true, true, true},
		{"different bools", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameJSON(tc.a, tc.b); got != tc.want {
				t.Errorf("SameJSON(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := SameJSON(tc.b, tc.a); got != tc.want {
				t.Errorf("SameJSON is not symmetric for %v, %v", tc.a, tc.b)
			}
		})
	}
}
