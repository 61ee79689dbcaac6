package stdlib

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var reCases = []callCase{
	{fn: "re.match", args: []any{`^web-\d+$`, "web-12"}, want: true},
	{fn: "re.match", args: []any{`\d`, "no digits"}, want: false},
	{fn: "re.match", args: []any{`a(`, "a"}, err: "re.match: argument 1 (pattern): invalid regular expression \"a(\": missing closing ): `a(`"},
	{fn: "re.match", args: []any{`(?=a)b`, "ab"}, err: "invalid or unsupported Perl syntax"},
	{fn: "re.match", args: []any{`a`, int64(1)}, err: "argument 2 (s): expected string, got int"},
	{fn: "re.find", args: []any{`\d+`, "abc 123 456"}, want: "123"},
	{fn: "re.find", args: []any{`x*`, "abc"}, want: ""},
	{fn: "re.find", args: []any{`\d`, "abc"}, want: nil},
	{fn: "re.find", args: []any{nil, "abc"}, err: "argument 1 (pattern): expected string, got null"},
	{fn: "re.find_all", args: []any{`\d+`, "a1 b22 c333"}, want: []any{"1", "22", "333"}},
	{fn: "re.find_all", args: []any{`\d+`, "a1 b22 c333", int64(2)}, want: []any{"1", "22"}},
	{fn: "re.find_all", args: []any{`\d+`, "abc"}, want: []any{}},
	{fn: "re.find_all", args: []any{`\d+`, "abc", "all"}, err: "argument 3 (n): expected int"},
	{fn: "re.find_submatch", args: []any{`(\w+)=(\d+)?(x)?`, "key=42"}, want: []any{"key=42", "key", "42", nil}},
	{fn: "re.find_submatch", args: []any{`(\w+)=`, "none"}, want: nil},
	{fn: "re.find_submatch", args: []any{`[`, "x"}, err: "missing closing ]"},
	{fn: "re.replace", args: []any{`(\w+)@(\w+)`, "bob@example alice@corp", "$2/${1}_$$"}, want: "example/bob_$ corp/alice_$"},
	{fn: "re.replace", args: []any{`(?P<user>\w+)@`, "bob@x", "<$user>"}, want: "<bob>x"},
	{fn: "re.replace", args: []any{`a`, "banana", "$missing$9"}, want: "bnn"},
	{fn: "re.replace", args: []any{`a`, "banana"}, err: "missing argument 3 (replacement)"},
	{fn: "re.split", args: []any{`\s*,\s*`, "a , b,c"}, want: []any{"a", "b", "c"}},
	{fn: "re.split", args: []any{`,`, "a,b,c", int64(2)}, want: []any{"a", "b,c"}},
	{fn: "re.split", args: []any{`*`, "a"}, err: "missing argument to repetition operator"},
	{fn: "re.quote_meta", args: []any{"1.5+x"}, want: `1\.5\+x`},
	{fn: "re.quote_meta", args: []any{int64(1)}, err: "argument 1 (s): expected string, got int"},
}

// TestReplaceMatchesRegexpExpand holds re.replace's template handling, whose result size is
// computed before the result is built, to Go's ReplaceAllString.
func TestReplaceMatchesRegexpExpand(t *testing.T) {
	patterns := []string{`(a)(b)?`, `(?P<x>\w)(?P<y>\d)?`, ``, `(é+)`, `x*`}
	templates := []string{"", "$1", "${1}x", "$1x", "$$", "$", "${", "${x}", "$x$y", "$0$1$2$3", "$01", "[$y]", "${1", "$é", "$1é"}
	inputs := []string{"", "abab a", "x1y2 é", "ééaé", "no"}
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		for _, tmpl := range templates {
			for _, in := range inputs {
				want := re.ReplaceAllString(in, tmpl)
				got, err := RE.Functions["replace"](nil, []any{p, in, tmpl}, nil)
				if err != nil || got != want {
					t.Errorf("replace(%q, %q, %q) = %q, %v; want %q", p, in, tmpl, got, err, want)
				}
			}
		}
	}
}

func TestReplaceSizeCap(t *testing.T) {
	env := &Env{MaxBytes: 1 << 20}
	in := strings.Repeat("ab", 1<<10)
	_, err := RE.Functions["replace"](env, []any{`(a)`, in, strings.Repeat("$1", 1<<10)}, nil)
	if err == nil || !strings.Contains(err.Error(), "result too large") {
		t.Fatalf("got %v, want result too large", err)
	}
}

// TestRegexpCacheIsBounded: many distinct patterns never grow the cache past its size, and a
// pattern used again after eviction still compiles.
func TestRegexpCacheIsBounded(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range regexpCacheSize * 2 {
				p := fmt.Sprintf("^p%d-%d$", g, i)
				got, err := RE.Functions["match"](nil, []any{p, fmt.Sprintf("p%d-%d", g, i)}, nil)
				if err != nil || got != true {
					t.Errorf("match(%s) = %v, %v", p, got, err)
				}
			}
		}()
	}
	wg.Wait()
	if n := regexps.len(); n > regexpCacheSize {
		t.Fatalf("cache holds %d patterns, bound is %d", n, regexpCacheSize)
	}
	long := strings.Repeat("a", maxCachedPattern+1)
	if got, err := RE.Functions["match"](nil, []any{long, long}, nil); err != nil || got != true {
		t.Fatalf("long pattern: %v, %v", got, err)
	}
	regexps.mu.Lock()
	_, cached := regexps.entries[long]
	regexps.mu.Unlock()
	if cached {
		t.Fatal("a pattern longer than maxCachedPattern was cached")
	}
}
