package phrase

import "testing"

func TestPhrases(t *testing.T) {
	tests := []struct{ got, want string }{
		{Count(0, "hook"), "0 hooks"},
		{Count(1, "hook"), "1 hook"},
		{Count(2, "starlark stub"), "2 starlark stubs"},
		{Either(nil), ""},
		{Either([]string{"a"}), "a"},
		{Either([]string{"a", "b"}), "a or b"},
		{Either([]string{"a", "b", "c"}), "a, b or c"},
		{ExactlyOne([]string{"a", "b", "c"}, nil).Error(), "exactly one of a, b or c must be set, got 0"},
		{ExactlyOne([]string{"a", "b", "c"}, []string{"a", "c"}).Error(), "exactly one of a, b or c must be set, got 2 (a, c)"},
		{TypeOf(nil), "null"},
		{TypeOf(map[string]any{}), "an object"},
		{TypeOf([]any{}), "a list"},
		{TypeOf(int64(1)), "a number"},
		{TypeOf(1.5), "a number"},
		{TypeOf(false), "a boolean"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if err := ExactlyOne([]string{"a", "b"}, []string{"b"}); err != nil {
		t.Errorf("ExactlyOne with one set: %v", err)
	}
}
