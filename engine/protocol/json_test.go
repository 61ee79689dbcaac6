package protocol

import "testing"

func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{map[string]any{"n": int64(3), "l": []any{"x", 1.5}}, map[string]any{"n": 3.0, "l": []any{"x", 1.5}}, true},
		{map[string]any{"n": int64(3)}, map[string]any{"n": int64(4)}, false},
		{map[string]any{"n": int64(3)}, map[string]any{"m": int64(3)}, false},
		{map[string]any{"n": int64(3)}, map[string]any{"n": int64(3), "m": nil}, false},
		{[]any{"a"}, []any{"a", "b"}, false},
		{"3", int64(3), false},
		{nil, nil, true},
		{true, true, true},
		{map[string]any{}, []any{}, false},
	} {
		if got := SameJSON(tc.a, tc.b); got != tc.want {
			t.Errorf("SameJSON(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
