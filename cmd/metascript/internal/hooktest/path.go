package hooktest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"metascript.dev/metascript/cmd/metascript/internal/phrase"
)

// Path locates a value in a JSON-shaped document. Its syntax, a subset of JSONPath:
//
//	children[0].metadata.name          field names and list indexes
//	metadata.labels["app.kubernetes.io/name"]   a key holding dots or brackets, quoted
//	children[-1]                       negative indexes count from the end
//	$.status.ready   .status.ready     an optional leading $ or .
//	"" or $                            the whole document
//
// Wildcards and filters are not supported.
type Path []step

// step is a map key or, when isIndex, a list index.
type step struct {
	key     string
	index   int
	isIndex bool
}

// ParsePath parses the syntax documented on Path.
func ParsePath(s string) (Path, error) {
	p := Path{}
	rest := strings.TrimPrefix(s, "$")
	first := true
	for rest != "" {
		switch {
		case rest[0] == '.':
			rest = rest[1:]
			if rest == "" || rest[0] == '.' || rest[0] == '[' {
				return nil, fmt.Errorf("path %q: empty field name", s)
			}
			fallthrough
		case first && rest[0] != '[':
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if strings.Contains(rest[:end], "]") {
				return nil, fmt.Errorf("path %q: unexpected ]", s)
			}
			p, rest = append(p, step{key: rest[:end]}), rest[end:]
		case rest[0] == '[':
			end := closingBracket(rest)
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", s)
			}
			inner := rest[1:end]
			st, err := bracket(inner)
			if err != nil {
				return nil, fmt.Errorf("path %q: %v", s, err)
			}
			p, rest = append(p, st), rest[end+1:]
		default:
			return nil, fmt.Errorf("path %q: expected . or [ at %q", s, rest)
		}
		first = false
	}
	return p, nil
}

// closingBracket finds the ] that closes the [ at s[0], skipping over a quoted key.
func closingBracket(s string) int {
	if len(s) > 1 && (s[1] == '"' || s[1] == '\'') {
		q := s[1]
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case q:
				if i+1 < len(s) && s[i+1] == ']' {
					return i + 1
				}
				return -1
			}
		}
		return -1
	}
	return strings.IndexByte(s, ']')
}

func bracket(inner string) (step, error) {
	switch {
	case inner == "":
		return step{}, fmt.Errorf("empty []")
	case inner == "*":
		return step{}, fmt.Errorf("wildcards are not supported")
	case inner[0] == '"':
		var k string
		if err := json.Unmarshal([]byte(inner), &k); err != nil {
			return step{}, fmt.Errorf("bad quoted key %s", inner)
		}
		return step{key: k}, nil
	case inner[0] == '\'':
		return step{key: strings.ReplaceAll(inner[1:len(inner)-1], `\'`, `'`)}, nil
	}
	i, err := strconv.Atoi(inner)
	if err != nil {
		return step{}, fmt.Errorf("[%s]: expected an index or a quoted key", inner)
	}
	return step{index: i, isIndex: true}, nil
}

// Lookup returns the value at p in doc. When it is absent, found is false and missing
// describes which step failed, e.g. `children has 2 items, no [3]`.
func (p Path) Lookup(doc any) (v any, found bool, missing string) {
	v = doc
	for i, st := range p {
		at := p[:i].String()
		if at == "" {
			at = "the response"
		}
		if st.isIndex {
			l, ok := v.([]any)
			if !ok {
				return nil, false, fmt.Sprintf("%s is %s, not a list", at, phrase.TypeOf(v))
			}
			idx := st.index
			if idx < 0 {
				idx += len(l)
			}
			if idx < 0 || idx >= len(l) {
				return nil, false, fmt.Sprintf("%s has %d items, no [%d]", at, len(l), st.index)
			}
			v = l[idx]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, fmt.Sprintf("%s is %s, not an object", at, phrase.TypeOf(v))
		}
		if v, ok = m[st.key]; !ok {
			return nil, false, fmt.Sprintf("%s has no field %s", at, quoteKey(st.key))
		}
	}
	return v, true, ""
}

// String writes p back in the syntax ParsePath reads, quoting keys only when needed.
func (p Path) String() string {
	var b strings.Builder
	for i, st := range p {
		switch {
		case st.isIndex:
			fmt.Fprintf(&b, "[%d]", st.index)
		case plainKey(st.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.key)
		default:
			b.WriteString("[" + strconv.Quote(st.key) + "]")
		}
	}
	return b.String()
}

// appendKey and appendIndex extend a path without sharing its backing array.
func (p Path) appendKey(k string) Path { return append(p[:len(p):len(p)], step{key: k}) }
func (p Path) appendIndex(i int) Path {
	return append(p[:len(p):len(p)], step{index: i, isIndex: true})
}
func plainKey(k string) bool   { return k != "" && !strings.ContainsAny(k, ".[]\"' ") && k[0] != '$' }
func quoteKey(k string) string { return Path{{key: k}}.String() }
func (p Path) stringOr(root string) string {
	if s := p.String(); s != "" {
		return s
	}
	return root
}
