package stdlib

import (
	"container/list"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// RE is the re module: regular expressions with Go's RE2 syntax and semantics
// (https://golang.org/s/re2syntax) in both languages, so matching runs in time linear in the
// input whatever the pattern. Patterns are unanchored: use ^ and $ to match a whole string.
//
//	match(pattern, s) -> bool               whether s contains a match
//	find(pattern, s) -> string or null      leftmost match
//	find_all(pattern, s, n=-1) -> list      successive non-overlapping matches, at most n when n >= 0
//	find_submatch(pattern, s) -> list or null
//	    The leftmost match followed by its capture groups; a group that did not take part
//	    in the match is null.
//	replace(pattern, s, replacement) -> string
//	    Every match replaced by replacement, in which $1, ${1}, $name and ${name} stand for
//	    capture groups and $$ for a literal $ (Go's Regexp.Expand).
//	split(pattern, s, n=-1) -> list         s split around matches, at most n parts when n >= 0
//	quote_meta(s) -> string                 s with every metacharacter escaped
//
// Compiled patterns are kept in a bounded least-recently-used cache shared by all hooks. A
// malformed pattern, or one longer than 16 KiB, is an error naming the pattern and what is
// wrong with it. replace checks the size of its result against Env.MaxBytes before building
// it; find_all, split and replace stop finding matches at what Env.MaxBytes affords (about
// 96 bytes a piece) and fail past it, so a pattern that matches everywhere, such as the
// empty one, fails on a long string instead of finding millions of matches.
var RE = &Module{
	Name: "re",
	Functions: map[string]Func{
		"match":         define("re.match", []string{"pattern", "s"}, reMatch),
		"find":          define("re.find", []string{"pattern", "s"}, reFind),
		"find_all":      define("re.find_all", []string{"pattern", "s", "n?"}, reFindAll),
		"find_submatch": define("re.find_submatch", []string{"pattern", "s"}, reFindSubmatch),
		"replace":       define("re.replace", []string{"pattern", "s", "replacement"}, reReplace),
		"split":         define("re.split", []string{"pattern", "s", "n?"}, reSplit),
		"quote_meta":    define("re.quote_meta", []string{"s"}, reQuoteMeta),
	},
}

// regexpCache is a bounded LRU of compiled patterns. Compile errors are not cached: they are
// cheap to reproduce and would let bad patterns evict good ones.
type regexpCache struct {
	mu      sync.Mutex
	size    int
	entries map[string]*list.Element
	order   list.List // front is most recently used; values are *regexp.Regexp
}

const (
	regexpCacheSize = 256
	// maxCachedPattern keeps huge patterns from pinning memory in the cache.
	maxCachedPattern = 4096
	// maxPattern bounds the length of a pattern: compiling one costs about 250 bytes per
	// byte of pattern, and matching time grows with the product of the pattern's size and
	// the input's, in one call no budget can interrupt (a 2 MiB pattern took seconds and
	// hundreds of megabytes to compile).
	maxPattern = 16 << 10
)

var regexps = &regexpCache{size: regexpCacheSize, entries: map[string]*list.Element{}}

func (c *regexpCache) get(pattern string) (*regexp.Regexp, error) {
	c.mu.Lock()
	if e, ok := c.entries[pattern]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*regexp.Regexp), nil
	}
	c.mu.Unlock()
	re, err := regexp.Compile(pattern)
	if err != nil || len(pattern) > maxCachedPattern {
		return re, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[pattern]; ok {
		return e.Value.(*regexp.Regexp), nil
	}
	c.entries[pattern] = c.order.PushFront(re)
	if c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*regexp.Regexp).String())
	}
	return re, nil
}

func (c *regexpCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// regexpAndString binds the (pattern, s) pair every function but quote_meta starts with.
func (a *args) regexpAndString() (*regexp.Regexp, string, error) {
	pattern, err := a.string(0)
	if err != nil {
		return nil, "", err
	}
	if len(pattern) > maxPattern {
		return nil, "", a.argErrorf(0, "pattern of %d bytes is longer than the limit of %d", len(pattern), maxPattern)
	}
	re, err := regexps.get(pattern)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, "", a.argErrorf(0, "invalid regular expression %s: %s", quote(pattern), msg)
	}
	s, err := a.string(1)
	if err != nil {
		return nil, "", err
	}
	return re, s, nil
}

func reMatch(env *Env, a *args) (any, error) {
	re, s, err := a.regexpAndString()
	if err != nil {
		return nil, err
	}
	return re.MatchString(s), nil
}

func reFind(env *Env, a *args) (any, error) {
	re, s, err := a.regexpAndString()
	if err != nil {
		return nil, err
	}
	loc := re.FindStringIndex(s)
	if loc == nil {
		return nil, nil
	}
	return s[loc[0]:loc[1]], nil
}

func reFindAll(env *Env, a *args) (any, error) {
	re, s, n, err := a.regexpStringLimit()
	if err != nil {
		return nil, err
	}
	found := re.FindAllString(s, matchLimit(env, n, perPiece))
	if err := a.reservePieces(env, int64(len(found))); err != nil {
		return nil, err
	}
	return stringList(found), nil
}

// matchLimit is the n to give FindAll* when at most n matches are wanted (all when n < 0):
// no more than one past what Env.MaxBytes affords at per bytes a match, so that a pattern
// matching everywhere (the empty pattern finds len(s)+1 matches) stops there instead of
// finding millions of matches in one call. A caller that gets more than the budget affords
// fails.
func matchLimit(env *Env, n int, per int64) int {
	limit := int(env.maxBytes()/per) + 1
	if n < 0 || n > limit {
		return limit
	}
	return n
}

// regexpStringLimit binds (pattern, string, n=-1) as find_all and split take them; an n
// past what the string can yield means all, as -1 does.
func (a *args) regexpStringLimit() (*regexp.Regexp, string, int, error) {
	re, s, err := a.regexpAndString()
	if err != nil {
		return nil, "", 0, err
	}
	n, err := a.optInt(2, -1)
	if err != nil {
		return nil, "", 0, err
	}
	if n > int64(len(s))+1 {
		n = -1
	}
	return re, s, int(n), nil
}

func reFindSubmatch(env *Env, a *args) (any, error) {
	re, s, err := a.regexpAndString()
	if err != nil {
		return nil, err
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return nil, nil
	}
	groups := make([]any, len(loc)/2)
	for i := range groups {
		if loc[2*i] >= 0 {
			groups[i] = s[loc[2*i]:loc[2*i+1]]
		}
	}
	return groups, nil
}

// reSplit is regexp.Regexp.Split finding at most matchLimit matches.
func reSplit(env *Env, a *args) (any, error) {
	re, s, n, err := a.regexpStringLimit()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []any{}, nil
	}
	if re.String() != "" && s == "" {
		return []any{""}, nil
	}
	matches := re.FindAllStringIndex(s, matchLimit(env, n, perPiece))
	if err := a.reservePieces(env, int64(len(matches))+1); err != nil {
		return nil, err
	}
	pieces := make([]any, 0, len(matches)+1)
	beg, end := 0, 0
	for _, m := range matches {
		if n > 0 && len(pieces) == n-1 {
			break
		}
		end = m[0]
		if m[1] != 0 {
			pieces = append(pieces, s[beg:end])
		}
		beg = m[1]
	}
	if end != len(s) {
		pieces = append(pieces, s[beg:])
	}
	return pieces, nil
}

func reQuoteMeta(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	return regexp.QuoteMeta(s), nil
}

func reReplace(env *Env, a *args) (any, error) {
	re, s, err := a.regexpAndString()
	if err != nil {
		return nil, err
	}
	template, err := a.string(2)
	if err != nil {
		return nil, err
	}
	tmpl := parseTemplate(re, template)
	// A match's indices: a slice header and two ints per group, twice over as the slice
	// grows, and twice again so that finding them takes at most half of Env.MaxBytes.
	perMatch := 4 * (24 + 16*int64(re.NumSubexp()+1))
	matches := re.FindAllStringSubmatchIndex(s, matchLimit(env, -1, perMatch))
	if n := int64(len(matches)); n > env.maxBytes()/perMatch {
		return nil, a.errorf("%w", fmt.Errorf("%w: more than %d matches (Env.MaxBytes)", errTooLarge, env.maxBytes()/perMatch))
	} else if err := a.reserve(env, n*perMatch); err != nil {
		return nil, err
	}
	size := int64(len(s))
	for _, m := range matches {
		size += tmpl.size(m) - int64(m[1]-m[0])
	}
	if err := a.reserve(env, size); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Grow(int(size))
	last := 0
	for _, m := range matches {
		b.WriteString(s[last:m[0]])
		tmpl.expand(&b, s, m)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// template is a parsed replacement: literal text and references to capture groups. It
// follows regexp.Regexp.Expand exactly, so its output size is known before it is built.
type template []templatePart

type templatePart struct {
	literal string
	group   int // -1 for literal text; a group that does not exist expands to nothing
}

func parseTemplate(re *regexp.Regexp, s string) template {
	var t template
	for {
		before, after, ok := strings.Cut(s, "$")
		if !ok {
			break
		}
		t = append(t, templatePart{literal: before, group: -1})
		s = after
		if s != "" && s[0] == '$' {
			t = append(t, templatePart{literal: "$", group: -1})
			s = s[1:]
			continue
		}
		name, num, rest, ok := extractGroupRef(s)
		if !ok {
			t = append(t, templatePart{literal: "$", group: -1})
			continue
		}
		s = rest
		if num < 0 {
			num = re.SubexpIndex(name)
			if num < 0 {
				num = re.NumSubexp() + 1 // expands to nothing
			}
		}
		t = append(t, templatePart{group: num})
	}
	return append(t, templatePart{literal: s, group: -1})
}

// extractGroupRef parses a group reference after '$' as regexp.Regexp.Expand does: a name
// of letters, digits and underscores, optionally in braces; a name that is a number without
// leading zeros is a group index.
func extractGroupRef(s string) (name string, num int, rest string, ok bool) {
	if s == "" {
		return
	}
	brace := false
	if s[0] == '{' {
		brace = true
		s = s[1:]
	}
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			break
		}
		i += size
	}
	if i == 0 {
		return
	}
	name = s[:i]
	if brace {
		if i >= len(s) || s[i] != '}' {
			return
		}
		i++
	}
	num = 0
	for j := 0; j < len(name); j++ {
		if name[j] < '0' || '9' < name[j] || num >= 1e8 {
			num = -1
			break
		}
		num = num*10 + int(name[j]) - '0'
	}
	if name[0] == '0' && len(name) > 1 {
		num = -1
	}
	return name, num, s[i:], true
}

func (t template) size(m []int) int64 {
	var n int64
	for _, p := range t {
		if p.group < 0 {
			n += int64(len(p.literal))
		} else if 2*p.group+1 < len(m) && m[2*p.group] >= 0 {
			n += int64(m[2*p.group+1] - m[2*p.group])
		}
	}
	return n
}

func (t template) expand(b *strings.Builder, s string, m []int) {
	for _, p := range t {
		if p.group < 0 {
			b.WriteString(p.literal)
		} else if 2*p.group+1 < len(m) && m[2*p.group] >= 0 {
			b.WriteString(s[m[2*p.group]:m[2*p.group+1]])
		}
	}
}
