package stdlib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"metascript.dev/metascript/stdlib/jsontext"
)

// This file holds the JSON-shaped value machinery the modules share: a size-capped encoder
// whose output matches encoding/json byte for byte (sorted keys, no HTML escaping), a decoder
// that yields the JSON shape with normalised numbers, and deep copy.

// errTooLarge is wrapped by every "result exceeds Env.MaxBytes" error.
var errTooLarge = errors.New("result too large")

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: more than %d bytes (Env.MaxBytes)", errTooLarge, limit)
}

// jsonEncoder appends the JSON encoding of a JSON-shaped value to buf and stops as soon as
// the output would exceed limit, so that a value sharing sub-values many times cannot make
// it allocate without bound. It grows buf itself, asking reserve (when set) before each new
// buffer, so the memory budget refuses a large encoding before it is written, not after.
// With indent set it lays out like json.MarshalIndent.
type jsonEncoder struct {
	buf     []byte
	limit   int64
	reserve func(n int64) error
	prefix  string
	indent  string
	depth   int
}

func encodeJSON(v any, limit int64, reserve func(int64) error, prefix, indent string) ([]byte, error) {
	e := &jsonEncoder{limit: limit, reserve: reserve, prefix: prefix, indent: indent}
	if err := e.value(v, ""); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// grow makes room for n more bytes: a buffer twice as large, or as large as needed, made
// once reserve admits it.
func (e *jsonEncoder) grow(n int) error {
	if cap(e.buf)-len(e.buf) >= n {
		return nil
	}
	need := int64(len(e.buf)) + int64(n)
	if need > e.limit {
		return tooLarge(e.limit)
	}
	size := max(need, min(2*int64(cap(e.buf)), e.limit), 512)
	if e.reserve != nil {
		if err := e.reserve(size); err != nil {
			return err
		}
	}
	buf := make([]byte, len(e.buf), size)
	copy(buf, e.buf)
	e.buf = buf
	return nil
}

// maxEncodeDepth bounds nesting, as encoding/json does, so a deep value is an error and not
// a stack overflow.
const maxEncodeDepth = 10000

func (e *jsonEncoder) value(v any, path string) error {
	if int64(len(e.buf)) > e.limit {
		return tooLarge(e.limit)
	}
	// Room for any scalar but a string (a float takes at most 24 bytes), and for the
	// brackets of a container.
	if err := e.grow(32); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case string:
		if err := e.grow(jsonStringLen(v)); err != nil {
			return err
		}
		e.buf = jsontext.AppendString(e.buf, v, false)
	case int64:
		e.buf = strconv.AppendInt(e.buf, v, 10)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(v), 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: unsupported number %v", pathOrRoot(path), v)
		}
		e.buf = jsontext.AppendFloat(e.buf, v)
	case json.Number:
		if err := e.grow(len(v)); err != nil {
			return err
		}
		e.buf = append(e.buf, v...)
	case []any:
		if len(v) == 0 {
			e.buf = append(e.buf, "[]"...)
			return nil
		}
		if e.depth++; e.depth > maxEncodeDepth {
			return fmt.Errorf("%s: nested more than %d levels", pathOrRoot(path), maxEncodeDepth)
		}
		e.buf = append(e.buf, '[')
		for i, x := range v {
			if err := e.separator(i); err != nil {
				return err
			}
			if err := e.value(x, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		e.depth--
		if err := e.separator(-1); err != nil {
			return err
		}
		e.buf = append(e.buf, ']')
	case map[string]any:
		if len(v) == 0 {
			e.buf = append(e.buf, "{}"...)
			return nil
		}
		if e.depth++; e.depth > maxEncodeDepth {
			return fmt.Errorf("%s: nested more than %d levels", pathOrRoot(path), maxEncodeDepth)
		}
		e.buf = append(e.buf, '{')
		for i, k := range sortedKeys(v) {
			if err := e.separator(i); err != nil {
				return err
			}
			if err := e.grow(jsonStringLen(k) + 2); err != nil {
				return err
			}
			e.buf = jsontext.AppendString(e.buf, k, false)
			e.buf = append(e.buf, ':')
			if e.indent != "" || e.prefix != "" {
				e.buf = append(e.buf, ' ')
			}
			if err := e.value(v[k], joinPath(path, k)); err != nil {
				return err
			}
		}
		e.depth--
		if err := e.separator(-1); err != nil {
			return err
		}
		e.buf = append(e.buf, '}')
	default:
		return fmt.Errorf("%s: unsupported Go type %T", pathOrRoot(path), v)
	}
	return nil
}

// separator writes what precedes element i of a container (a comma after the first) and,
// when indenting, a line break and indentation; i < 0 is the closing bracket's line. It
// leaves room for the bracket.
func (e *jsonEncoder) separator(i int) error {
	n := 2
	if e.indent != "" || e.prefix != "" {
		n += 1 + len(e.prefix) + e.depth*len(e.indent)
	}
	if err := e.grow(n); err != nil {
		return err
	}
	if i > 0 {
		e.buf = append(e.buf, ',')
	}
	if e.indent == "" && e.prefix == "" {
		return nil
	}
	e.buf = append(e.buf, '\n')
	e.buf = append(e.buf, e.prefix...)
	for range e.depth {
		e.buf = append(e.buf, e.indent...)
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pathOrRoot(path string) string {
	if path == "" {
		return "value"
	}
	return path
}

// jsonStringLen is the length of jsontext.AppendString's output for s (html false).
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '\\', c == '"', c == '\b', c == '\f', c == '\n', c == '\r', c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// decodeJSON parses exactly one JSON value into the JSON shape. A number becomes int64 when
// it is integral and fits in int64 (so 3, 3.0 and 3e0 all decode to 3), float64 otherwise:
// the same value then reaches Starlark and JavaScript as the same number.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, errors.New("empty input")
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid character after top-level value at offset %d", dec.InputOffset())
	}
	return normalizeNumbers(v)
}

// normalizeNumbers replaces every json.Number in v, in place, by int64 or float64. It is
// used only on values the package has just decoded and owns.
func normalizeNumbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		return jsonNumber(string(v))
	case map[string]any:
		for k, x := range v {
			n, err := normalizeNumbers(x)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, x := range v {
			n, err := normalizeNumbers(x)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

func jsonNumber(s string) (any, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s out of range", s)
	}
	return normalizeFloat(f), nil
}

// normalizeFloat returns f as int64 when it is integral and fits, else f.
func normalizeFloat(f float64) any {
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	return f
}

// deepCopy returns a copy of a JSON-shaped value that shares no map or slice with it.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}
