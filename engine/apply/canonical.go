package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
)

// canonicalHash returns the hex SHA-256 of json.Marshal(v), byte for byte, for v of the
// shape normalizedCopy gives (maps, slices, strings, booleans, nil, int64, float64). It
// encodes those directly, without reflection, because every sync of every child hashes its
// configuration; a string that needs escaping, a float and any other type are encoded by
// json.Marshal itself, so the bytes never differ. An error is json.Marshal's.
func canonicalHash(v any) (string, error) {
	bp := canonicalBuffers.Get().(*[]byte)
	buf, err := appendCanonical((*bp)[:0], v)
	var sum [sha256.Size]byte
	if err == nil {
		sum = sha256.Sum256(buf)
	}
	if cap(buf) <= maxPooledBuffer {
		*bp = buf
		canonicalBuffers.Put(bp) // only once nothing reads buf any more
	}
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// canonicalBuffers recycles canonicalHash's buffers, up to maxPooledBuffer bytes: a
// configuration's bytes are only hashed.
const maxPooledBuffer = 64 << 10

var canonicalBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func appendCanonical(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case string:
		return appendCanonicalString(buf, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // json.Marshal sorts keys by their bytes too
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendCanonicalString(buf, k); err != nil {
				return nil, err
			}
			buf = append(buf, ':')
			if buf, err = appendCanonical(buf, x[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendCanonical(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, raw...), nil
}

// appendCanonicalString writes s quoted; json.Marshal writes strings with a byte it escapes
// (quotes, backslashes, control characters, <, > and &, non-ASCII) itself.
func appendCanonicalString(buf []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			return append(buf, raw...), nil
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"'), nil
}
