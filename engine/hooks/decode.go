package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// DecodeJSON decodes JSON into the engine's value shape: int64 for integral numbers that
// fit, float64 for the rest. A duplicated key keeps its last value.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case json.Number:
		return numberValue(t)
	}
	return v
}

func numberValue(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}

// maxJSONDepth is how deeply decodeStrictJSON lets arrays and objects nest, as
// encoding/json does.
const maxJSONDepth = 10000

// duplicateKeyError reports a key given twice in one JSON object; path locates the second.
type duplicateKeyError struct{ path string }

func (e *duplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %s", e.path) }

// decodeStrictJSON is DecodeJSON refusing a duplicated key anywhere (*duplicateKeyError)
// and anything after the value.
func decodeStrictJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := strictValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the top-level value")
	}
	return v, nil
}

func strictValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("exceeded max depth")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Number:
		return numberValue(t), nil
	case json.Delim:
		if t == '[' {
			list := []any{}
			for i := 0; dec.More(); i++ {
				v, err := strictValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ]
			return list, err
		}
		obj := map[string]any{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := tok.(string) // the decoder only yields strings as object keys
			at := strings.TrimPrefix(path+"."+key, ".")
			if _, dup := obj[key]; dup {
				return nil, &duplicateKeyError{path: fmt.Sprintf("%q", at)}
			}
			if obj[key], err = strictValue(dec, at, depth+1); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token() // }
		return obj, err
	}
	return tok, nil // string, bool or nil
}

// checkFields applies the field rule to a decoded response: strict refuses a top-level
// field not in Fields, naming it unless hide (a tenant's webhook), loose deletes it from
// resp (logging it at debug level).
func (r ResponseRules) checkFields(url string, resp map[string]any, log *slog.Logger, hide bool) error {
	if r.Fields == nil {
		return nil
	}
	var unknown []string
	for k := range resp {
		if !slices.Contains(r.Fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	if r.Strict && hide {
		return &ResponseError{Msg: fmt.Sprintf("webhook %s: strict responseUnMarshallMode: %d top-level fields of the %s hook's response are not allowed (allowed: %s; %s)",
			url, len(unknown), r.Hook, strings.Join(r.Fields, ", "), bodyHidden)}
	}
	if r.Strict {
		return &ResponseError{Msg: fmt.Sprintf("webhook %s: strict responseUnMarshallMode: unknown field %q in the %s hook's response (allowed: %s)",
			url, unknown[0], r.Hook, strings.Join(r.Fields, ", "))}
	}
	for _, k := range unknown {
		delete(resp, k)
	}
	if log != nil {
		log.Debug("webhook response fields ignored (loose responseUnMarshallMode)", "fields", unknown)
	}
	return nil
}
