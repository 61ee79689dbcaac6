// Package wire reads what the API server sends the engine: JSON answers, lists and watch
// events, decoded in one pass into the values unstructured objects hold, and the dynamic
// client that uses it (NewDynamic).
//
// client-go's dynamic client decodes each watch event in about nine passes over its bytes
// (frame, envelope, kind sniffing, validation, list detection, the map, number conversion)
// with reflection; a cold start of thousands of children spends half the engine's CPU
// there. Decode makes one pass and gives the same values: objects as map[string]any, arrays
// as []any, integers that fit as int64, other numbers as float64 (sigs.k8s.io/json with
// PreserveInts, as apimachinery's decoding of unstructured objects does), invalid UTF-8 as
// U+FFFD, the last of duplicate keys.
package wire

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting, as encoding/json does, so hostile input cannot exhaust the stack.
const maxDepth = 10000

// SyntaxError says where the input stops being JSON.
type SyntaxError struct {
	Offset int // bytes read before the error
	msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("wire: %s at offset %d", e.msg, e.Offset) }

var errDepth = errors.New("wire: nesting deeper than 10000")

// Decode parses one JSON value, which must be an object, with nothing but white space after
// it. It is safe for concurrent use; the result shares no memory with data.
func Decode(data []byte) (map[string]any, error) { return decode(data, whole) }

// shape is what decode leaves out of the objects it builds, and what they may share.
type shape uint8

const (
	// whole keeps every field; the result shares nothing.
	whole shape = iota
	// answer leaves out metadata.managedFields of the object, or of each item of a list:
	// for write answers and reads the engine uses as it uses cached objects, never reading
	// managedFields. Building them costs a third of a typical child's decoding.
	answer
	// cached is answer, shaped for holding many objects: the values objects hold alike
	// (apiVersion, kind, metadata.namespace, metadata.creationTimestamp, metadata.labels and
	// metadata.ownerReferences) are, when equal to ones decoded recently, the same values
	// (sharedSubtrees). The result then shares memory with other results, which is safe
	// because the cache's objects are read and never modified.
	cached
)

// decode is Decode, the result shaped as s says.
func decode(data []byte, s shape) (map[string]any, error) {
	p := parser{data: data, shape: s}
	p.space()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return nil, p.fail("want an object")
	}
	m, err := p.object(root)
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return m, nil
}

// parser is one pass over data. Not for concurrent use.
type parser struct {
	data  []byte
	pos   int
	depth int
	shape shape
}

// role is where an object or array is in a Kubernetes object, for the shapes.
type role uint8

const (
	plain role = iota
	root       // an object, or a list; of an array: its items
	meta       // an object's metadata
)

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.pos, msg: msg} }

// end checks that only white space follows the value.
func (p *parser) end() error {
	p.space()
	if p.pos != len(p.data) {
		return p.fail("data after the value")
	}
	return nil
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	p.space()
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(plain)
	case c == '[':
		return p.array(plain)
	case c == '"':
		return p.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.fail(fmt.Sprintf("unexpected %q", c))
	}
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	return nil
}

// object parses from '{' through '}'.
func (p *parser) object(r role) (map[string]any, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, errDepth
	}
	p.pos++ // '{'
	m := map[string]any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return m, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("want a key")
		}
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("want ':'")
		}
		p.pos++
		var v any
		switch {
		case r == root && k == "metadata":
			v, err = p.valueAs(meta)
		case r == root && k == "items":
			v, err = p.valueAs(root)
		case r == meta && k == "managedFields" && p.shape != whole:
			p.space()
			if err = p.skip(); err == nil {
				goto next
			}
		case p.shape == cached && (r == root && (k == "apiVersion" || k == "kind") ||
			r == meta && (k == "namespace" || k == "creationTimestamp" || k == "labels" || k == "ownerReferences")):
			v, err = p.shared()
		default:
			v, err = p.value()
		}
		if err != nil {
			return nil, err
		}
		m[k] = v
	next:
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return m, nil
		default:
			return nil, p.fail("want ',' or '}'")
		}
	}
}

// valueAs parses a value whose objects, or whose array's objects, have role r.
func (p *parser) valueAs(r role) (any, error) {
	p.space()
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '{':
			return p.object(r)
		case '[':
			return p.array(r)
		}
	}
	return p.value()
}

// array parses from '[' through ']'; its objects have role r (root: a list's items).
func (p *parser) array(r role) ([]any, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, errDepth
	}
	p.pos++ // '['
	a := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return a, nil
	}
	for {
		var v any
		var err error
		if r == root {
			v, err = p.valueAs(root)
		} else {
			v, err = p.value()
		}
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return a, nil
		default:
			return nil, p.fail("want ',' or ']'")
		}
	}
}

// key parses a string used as a key: well-known keys come from one shared copy, which saves
// an allocation per key and the memory of the same key in every cached object.
func (p *parser) key() (string, error) {
	start := p.pos + 1
	if end, ok := p.plain(start); ok {
		p.pos = end + 1
		if k, ok := knownKeys[string(p.data[start:end])]; ok {
			return k, nil
		}
		return string(p.data[start:end]), nil
	}
	return p.string()
}

func (p *parser) string() (string, error) {
	start := p.pos + 1
	if end, ok := p.plain(start); ok {
		p.pos = end + 1
		return string(p.data[start:end]), nil
	}
	return p.unquote(start)
}

// plain finds the closing quote of a string starting at start that needs no unquoting:
// ASCII without escapes or control characters.
func (p *parser) plain(start int) (end int, ok bool) {
	for i := start; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			return i, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return 0, false
		}
	}
	return 0, false
}

// unquote parses a string with escapes or non-ASCII bytes, as encoding/json does: invalid
// UTF-8 and unpaired surrogates become U+FFFD; control characters are errors.
func (p *parser) unquote(start int) (string, error) {
	b := make([]byte, 0, 32)
	i := start
	for i < len(p.data) {
		c := p.data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(b), nil
		case c < 0x20:
			p.pos = i
			return "", p.fail("control character in string")
		case c == '\\':
			if i+1 >= len(p.data) {
				p.pos = i
				return "", p.fail("unexpected end")
			}
			i++
			switch e := p.data[i]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(p.data, i+1)
				if !ok {
					p.pos = i
					return "", p.fail("invalid \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok := rune(-1), false
					if i+2 < len(p.data) && p.data[i+1] == '\\' && p.data[i+2] == 'u' {
						r2, ok = hex4(p.data, i+3)
					}
					if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				p.pos = i
				return "", p.fail("invalid escape")
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, p.data[i:i+size]...)
			}
			i += size
		}
	}
	p.pos = i
	return "", p.fail("unterminated string")
}

// hex4 reads four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number parses a JSON number: int64 when it has no '.' and fits (digits only, or an
// exponent ParseInt accepts: none), float64 otherwise.
func (p *parser) number() (any, error) {
	start := p.pos
	i := p.pos
	if p.data[i] == '-' {
		i++
	}
	digits := i
	switch {
	case i < len(p.data) && p.data[i] == '0':
		i++
	case i < len(p.data) && p.data[i] >= '1' && p.data[i] <= '9':
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.fail("invalid number")
	}
	integer := true
	if i < len(p.data) && p.data[i] == '.' {
		integer = false
		i++
		if i >= len(p.data) || p.data[i] < '0' || p.data[i] > '9' {
			p.pos = i
			return nil, p.fail("invalid number")
		}
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
		}
	}
	if i < len(p.data) && (p.data[i] == 'e' || p.data[i] == 'E') {
		integer = false
		i++
		if i < len(p.data) && (p.data[i] == '+' || p.data[i] == '-') {
			i++
		}
		if i >= len(p.data) || p.data[i] < '0' || p.data[i] > '9' {
			p.pos = i
			return nil, p.fail("invalid number")
		}
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
		}
	}
	p.pos = i
	if integer && i-digits <= 18 { // fits in int64 without overflow checks
		var n int64
		for _, c := range p.data[digits:i] {
			n = n*10 + int64(c-'0')
		}
		if digits != start {
			n = -n
		}
		return n, nil
	}
	s := string(p.data[start:i])
	if integer {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Only a magnitude beyond float64 gets here; encoding/json refuses it too.
		p.pos = start
		return nil, p.fail("number out of range")
	}
	return f, nil
}

// knownKeys are the keys of Kubernetes objects common enough to share one copy of.
var knownKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"apiVersion", "kind", "metadata", "spec", "status", "data", "binaryData", "items",
		"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
		"deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
		"ownerReferences", "controller", "blockOwnerDeletion", "finalizers", "generateName",
		"managedFields", "manager", "operation", "time", "fieldsType", "fieldsV1", "subresource",
		"conditions", "type", "reason", "message", "lastTransitionTime", "observedGeneration",
		"object", "continue", "remainingItemCount", "selector", "matchLabels", "template",
		"replicas", "value", "key", "values", "operator", "matchExpressions",
		// The keys the engine writes on the objects it makes.
		"metascript.dev/applied-hash", "metascript.dev/parent-uid", "metascript.dev/map-controller",
		"metascript.dev/map-key", "metascript.dev/decorator-controller", "metascript.dev/composite-controller",
		"metascript.dev/controller-uid",
	} {
		m[k] = k
	}
	return m
}()
