package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"metascript.dev/metascript/stdlib/jsontext"
)

// Encode appends the JSON of v to b, byte for byte what encoding/json's Marshal writes for
// the values an unstructured object holds (map[string]any with sorted keys, []any, string,
// bool, nil, int64, float64 and the other numbers), without reflection and without the
// second pass that compacts a Marshaler's output. Any other type goes to encoding/json.
func Encode(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return jsontext.AppendString(b, v, true), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("wire: unsupported value: %v", v)
		}
		return jsontext.AppendFloat(b, v), nil
	case map[string]any:
		return appendObject(b, v)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = Encode(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// keyLists hands out slices for sorting an object's keys.
var keyLists = sync.Pool{New: func() any { s := make([]string, 0, 16); return &s }}

func appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	kp := keyLists.Get().(*[]string)
	keys := (*kp)[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, k, true)
		b = append(b, ':')
		if b, err = Encode(b, m[k]); err != nil {
			break
		}
	}
	clear(keys)
	*kp = keys[:0]
	keyLists.Put(kp)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
