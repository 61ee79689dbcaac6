package stdlib

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

var hashCases = []callCase{
	{fn: "hash.sha256", args: []any{"abc"}, want: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	{fn: "hash.sha256", args: []any{""}, want: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	{fn: "hash.sha256", args: []any{int64(1)}, err: "argument 1 (text): expected string, got int"},
	// Lowercase base32hex of sha256("abc"), computed independently; pinned so names never change.
	{fn: "hash.short", args: []any{"abc"}, want: "n9s1dfsf07"},
	{fn: "hash.short", args: []any{"abc", int64(3)}, want: "n9s"},
	{fn: "hash.short", args: []any{"abc", int64(0)}, err: "argument 2 (length): must be between 1 and 52, got 0"},
	{fn: "hash.short", args: []any{"abc", int64(53)}, err: "must be between 1 and 52"},
	{fn: "hash.short", args: []any{map[string]any{}}, err: "argument 1 (text): expected string, got dict"},
}

func TestShortHashIsDNSLabelSafe(t *testing.T) {
	for _, s := range []string{"", "a", "web-0", "ünïcode", "{\"spec\":1}"} {
		h := shortHash(s, maxShortHashLength)
		if len(h) != maxShortHashLength {
			t.Errorf("shortHash(%q) has length %d", s, len(h))
		}
		if errs := validation.IsDNS1123Label(h); len(errs) > 0 {
			t.Errorf("shortHash(%q) = %q is not a DNS-1123 label: %v", s, h, errs)
		}
	}
}
