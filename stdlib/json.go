package stdlib

import (
	"bytes"
	"encoding/json"
)

// JSON is the json module: JSON text to and from JSON-shaped values.
//
//	encode(value) -> string
//	    Compact JSON of value with object keys sorted and no HTML escaping, byte for byte what
//	    Go's encoding/json produces. NaN, infinities and values nested deeper than 10000
//	    levels are errors naming the path of the bad value.
//	decode(text) -> value
//	    Parses exactly one JSON value. A number decodes to an int when it is integral and fits
//	    in 64 bits (3, 3.0 and 3e0 all give 3), to a float otherwise, in both languages. What
//	    the value will cost (about 128 bytes per element or member, 512 more per object) is
//	    checked against the memory budget before decoding.
//	indent(value, prefix="", indent="  ") -> string
//	    Multi-line JSON. A string value is taken as JSON text and re-laid out keeping its
//	    key order and number spelling; any other value is encoded as by encode. Each line
//	    after the first starts with prefix followed by one indent per nesting level.
//
// Every result is capped by Env.MaxBytes.
var JSON = &Module{
	Name: "json",
	Functions: map[string]Func{
		"encode": define("json.encode", []string{"value"}, jsonEncode),
		"decode": define("json.decode", []string{"text"}, jsonDecode),
		"indent": define("json.indent", []string{"value", "prefix?", "indent?"}, jsonIndent),
	},
}

func jsonEncode(env *Env, a *args) (any, error) {
	b, err := encodeJSON(a.value(0), env.maxBytes(), env.Reserve, "", "")
	if err != nil {
		return nil, a.argErrorf(0, "%w", err)
	}
	if err := a.reserve(env, int64(len(b))); err != nil {
		return nil, err
	}
	return string(b), nil
}

func jsonDecode(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	if err := a.reserve(env, decodedJSONSize(s)); err != nil {
		return nil, err
	}
	v, err := decodeJSON([]byte(s))
	if err != nil {
		return nil, a.argErrorf(0, "invalid JSON: %v", err)
	}
	return v, nil
}

func jsonIndent(env *Env, a *args) (any, error) {
	prefix, err := a.optString(1, "")
	if err != nil {
		return nil, err
	}
	indent, err := a.optString(2, "  ")
	if err != nil {
		return nil, err
	}
	text, isText := a.value(0).(string)
	if !isText {
		b, err := encodeJSON(a.value(0), env.maxBytes(), env.Reserve, prefix, indent)
		if err != nil {
			return nil, a.argErrorf(0, "%w", err)
		}
		if err := a.reserve(env, int64(len(b))); err != nil {
			return nil, err
		}
		return string(b), nil
	}
	if !json.Valid([]byte(text)) {
		_, err := decodeJSON([]byte(text))
		return nil, a.argErrorf(0, "invalid JSON text: %v", err)
	}
	if err := a.reserve(env, indentedSizeBound(text, len(prefix), len(indent))); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(text), prefix, indent); err != nil {
		return nil, a.argErrorf(0, "invalid JSON text: %v", err)
	}
	return buf.String(), nil
}

// What a decoded value costs, from decoding to the hook's own copy, per token of its text
// (a number, string, member or element: about 128 bytes, though it may take two bytes of
// text) and per object (a map: about 512 bytes more). Decoding "[0,0,...]" otherwise made
// 64 times its text, "[{},{},...]" 200 times, in one call.
const (
	perJSONToken  = 128
	perJSONObject = 512
)

// decodedJSONSize estimates what decoding text allocates: the text itself twice (a copy and
// the strings), and what its tokens and objects cost, counted outside strings.
func decodedJSONSize(text string) int64 {
	var tokens, objects int64
	eachStructural(text, func(c byte) {
		switch c {
		case ',', ':':
			tokens++
		case '{':
			objects++
		}
	})
	return 2*int64(len(text)) + (tokens+1)*perJSONToken + objects*perJSONObject
}

// indentedSizeBound is an upper bound on the size of json.Indent's output for valid JSON
// text: each line break follows '{', '[' or ',' or precedes '}' or ']', and carries the prefix
// and at most the deepest nesting's indentation; each ':' gains a space.
func indentedSizeBound(text string, prefixLen, indentLen int) int64 {
	var breaks, colons, depth, maxDepth int64
	eachStructural(text, func(c byte) {
		switch c {
		case '{', '[':
			breaks += 2
			depth++
			maxDepth = max(maxDepth, depth)
		case '}', ']':
			depth--
		case ',':
			breaks++
		case ':':
			colons++
		}
	})
	return int64(len(text)) + colons + breaks*(1+int64(prefixLen)+maxDepth*int64(indentLen))
}

// eachStructural calls visit with each byte of JSON text outside string literals.
func eachStructural(text string, visit func(c byte)) {
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case !inString && c == '"':
			inString = true
		case !inString:
			visit(c)
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inString = false
		}
	}
}
