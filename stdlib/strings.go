package stdlib

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Strings is the strings module: Go's strings package, so that a hook gets the same answer in
// Starlark (whose strings are bytes) and JavaScript (whose strings are UTF-16). Positions and
// lengths are counted in Unicode code points, never in bytes or UTF-16 units.
//
//	has_prefix(s, prefix) -> bool
//	has_suffix(s, suffix) -> bool
//	contains(s, substr) -> bool
//	contains_any(s, chars) -> bool       any code point of chars occurs in s
//	count(s, substr) -> int              non-overlapping occurrences; "" counts code points + 1
//	equal_fold(a, b) -> bool             equal under Unicode case folding
//	lower(s) -> string
//	upper(s) -> string
//	trim_space(s) -> string              leading and trailing Unicode white space removed
//	trim(s, cutset) -> string            leading and trailing code points in cutset removed
//	trim_left(s, cutset) -> string
//	trim_right(s, cutset) -> string
//	trim_prefix(s, prefix) -> string     s without prefix if it starts with it, else s
//	trim_suffix(s, suffix) -> string
//	split(s, sep, n=-1) -> list          at most n parts when n >= 0 (n == 0 gives []);
//	                                     sep "" splits into code points
//	fields(s) -> list                    split around runs of white space, no empty parts
//	cut(s, sep) -> [before, after, found] around the first sep; found is a bool
//	join(parts, sep) -> string           parts must all be strings
//	replace(s, old, new, n=-1) -> string first n non-overlapping occurrences, all when n < 0
//	repeat(s, count) -> string           count >= 0
//	length(s) -> int                     number of code points
//
// Results that could grow past Env.MaxBytes (join, replace, repeat, and split and fields,
// whose every piece costs about 96 bytes) are checked before they are built.
var Strings = &Module{
	Name: "strings",
	Functions: map[string]Func{
		"has_prefix":   stringPredicate("strings.has_prefix", "prefix", strings.HasPrefix),
		"has_suffix":   stringPredicate("strings.has_suffix", "suffix", strings.HasSuffix),
		"contains":     stringPredicate("strings.contains", "substr", strings.Contains),
		"contains_any": stringPredicate("strings.contains_any", "chars", strings.ContainsAny),
		"equal_fold":   stringPredicate("strings.equal_fold", "b", strings.EqualFold),
		"count": stringBinary("strings.count", "substr", func(s, t string) any {
			return int64(strings.Count(s, t))
		}),
		"lower":      stringUnary("strings.lower", strings.ToLower),
		"upper":      stringUnary("strings.upper", strings.ToUpper),
		"trim_space": stringUnary("strings.trim_space", strings.TrimSpace),
		"trim": stringBinary("strings.trim", "cutset", func(s, t string) any {
			return strings.Trim(s, t)
		}),
		"trim_left": stringBinary("strings.trim_left", "cutset", func(s, t string) any {
			return strings.TrimLeft(s, t)
		}),
		"trim_right": stringBinary("strings.trim_right", "cutset", func(s, t string) any {
			return strings.TrimRight(s, t)
		}),
		"trim_prefix": stringBinary("strings.trim_prefix", "prefix", func(s, t string) any {
			return strings.TrimPrefix(s, t)
		}),
		"trim_suffix": stringBinary("strings.trim_suffix", "suffix", func(s, t string) any {
			return strings.TrimSuffix(s, t)
		}),
		"split":   define("strings.split", []string{"s", "sep", "n?"}, stringsSplit),
		"fields":  define("strings.fields", []string{"s"}, stringsFields),
		"cut":     define("strings.cut", []string{"s", "sep"}, stringsCut),
		"join":    define("strings.join", []string{"parts", "sep"}, stringsJoin),
		"replace": define("strings.replace", []string{"s", "old", "new", "n?"}, stringsReplace),
		"repeat":  define("strings.repeat", []string{"s", "count"}, stringsRepeat),
		"length":  stringUnaryAny("strings.length", func(s string) any { return int64(utf8.RuneCountInString(s)) }),
	},
}

func stringUnary(fn string, f func(string) string) Func {
	return stringUnaryAny(fn, func(s string) any { return f(s) })
}

func stringUnaryAny(fn string, f func(string) any) Func {
	return define(fn, []string{"s"}, func(env *Env, a *args) (any, error) {
		s, err := a.string(0)
		if err != nil {
			return nil, err
		}
		return f(s), nil
	})
}

func stringBinary(fn, second string, f func(s, t string) any) Func {
	first := "s"
	if second == "b" {
		first = "a"
	}
	return define(fn, []string{first, second}, func(env *Env, a *args) (any, error) {
		s, err := a.string(0)
		if err != nil {
			return nil, err
		}
		t, err := a.string(1)
		if err != nil {
			return nil, err
		}
		return f(s, t), nil
	})
}

func stringPredicate(fn, second string, f func(s, t string) bool) Func {
	return stringBinary(fn, second, func(s, t string) any { return f(s, t) })
}

func stringList(parts []string) []any {
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}

func stringsSplit(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	sep, err := a.string(1)
	if err != nil {
		return nil, err
	}
	n, err := a.optInt(2, -1)
	if err != nil {
		return nil, err
	}
	if n > int64(len(s))+1 {
		n = -1
	}
	pieces := int64(utf8.RuneCountInString(s))
	if sep != "" {
		pieces = int64(strings.Count(s, sep)) + 1
	}
	if n >= 0 {
		pieces = min(pieces, n)
	}
	if err := a.reservePieces(env, pieces); err != nil {
		return nil, err
	}
	return stringList(strings.SplitN(s, sep, int(n))), nil
}

func stringsFields(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	var fields int64
	inField := false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !inField {
			fields++
		}
		inField = !space
	}
	if err := a.reservePieces(env, fields); err != nil {
		return nil, err
	}
	return stringList(strings.Fields(s)), nil
}

func stringsCut(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	sep, err := a.string(1)
	if err != nil {
		return nil, err
	}
	before, after, found := strings.Cut(s, sep)
	return []any{before, after, found}, nil
}

func stringsJoin(env *Env, a *args) (any, error) {
	parts, err := a.stringList(0)
	if err != nil {
		return nil, err
	}
	sep, err := a.string(1)
	if err != nil {
		return nil, err
	}
	size := int64(len(sep)) * int64(max(len(parts)-1, 0))
	for _, p := range parts {
		size += int64(len(p))
	}
	if err := a.reserve(env, size); err != nil {
		return nil, err
	}
	return strings.Join(parts, sep), nil
}

func stringsReplace(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	old, err := a.string(1)
	if err != nil {
		return nil, err
	}
	repl, err := a.string(2)
	if err != nil {
		return nil, err
	}
	n, err := a.optInt(3, -1)
	if err != nil {
		return nil, err
	}
	count := int64(strings.Count(s, old))
	if n >= 0 && n < count {
		count = n
	}
	if err := a.reserve(env, int64(len(s))+count*(int64(len(repl))-int64(len(old)))); err != nil {
		return nil, err
	}
	return strings.Replace(s, old, repl, int(count)), nil
}

func stringsRepeat(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	count, err := a.int(1)
	if err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, a.argErrorf(1, "must not be negative, got %d", count)
	}
	if len(s) > 0 && count > env.maxBytes()/int64(len(s)) {
		return nil, a.errorf("%w", tooLarge(env.maxBytes()))
	}
	if err := a.reserve(env, int64(len(s))*count); err != nil {
		return nil, err
	}
	return strings.Repeat(s, int(count)), nil
}
