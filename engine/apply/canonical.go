package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// canonicalHash returns the hex SHA-256 of json.Marshal(v), byte for byte, for v of the
// shape normalizedCopy gives (maps, slices, strings, booleans, nil, int64, float64). It
// encodes those directly, without reflection, because every sync of every child hashes its
// configuration; a string that needs escaping, a float and any other type are encoded by
// json.Marshal itself, so the bytes never differ. An error is json.Marshal's.
func canonicalHash(v any) (string, error) {
	e := canonicalEncoders.Get().(*canonicalEncoder)
	defer e.release()
	if err := e.value(v); err != nil {
		return "", err
	}
	sum := sha256.Sum256(e.buf)
	return hex.EncodeToString(sum[:]), nil
}

// hexHash is a configuration hash as canonicalHash writes it, kept in an array so that
// comparing it with a recorded one allocates nothing.
type hexHash [2 * sha256.Size]byte

// configHash is canonicalHash of the configuration that configuration makes of desired for
// owner, computed from desired in place: desired must satisfy inPlace.
func configHash(owner *metav1.OwnerReference, desired map[string]any) (hexHash, error) {
	e := canonicalEncoders.Get().(*canonicalEncoder)
	defer e.release()
	var h hexHash
	if err := e.object(desired, configTop, owner); err != nil {
		return h, err
	}
	sum := sha256.Sum256(e.buf)
	hex.Encode(h[:], sum[:])
	return h, nil
}

// canonicalEncoder writes the bytes canonicalHash hashes. Encoders are pooled: a
// configuration's bytes are only hashed.
type canonicalEncoder struct {
	buf []byte
	// keys holds the sorted keys of the maps being written, the innermost last.
	keys []string
}

// maxPooledBuffer bounds the buffer an encoder keeps when it goes back to the pool.
const maxPooledBuffer = 64 << 10

var canonicalEncoders = sync.Pool{New: func() any { return &canonicalEncoder{buf: make([]byte, 0, 1024)} }}

// release returns e to the pool, once nothing reads its buffer any more.
func (e *canonicalEncoder) release() {
	if cap(e.buf) > maxPooledBuffer {
		return
	}
	e.buf, e.keys = e.buf[:0], e.keys[:0]
	canonicalEncoders.Put(e)
}

// level says which map of a configuration an encoder writes, for the ones whose keys a
// configuration made in place changes (configHash).
type level int

const (
	anyMap            level = iota
	configTop               // the object: its metadata is the configuration's
	configMeta              // metadata: no server fields, owner as its only owner reference
	configAnnotations       // metadata.annotations: no hash annotation
)

func (e *canonicalEncoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case string:
		return e.string(x)
	case map[string]any:
		return e.object(x, anyMap, nil)
	case []any:
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, raw...)
	}
	return nil
}

// object writes m as the map at lvl; owner is the configuration's owner at configTop and
// configMeta, where m has no ownerReferences of its own.
func (e *canonicalEncoder) object(m map[string]any, lvl level, owner *metav1.OwnerReference) error {
	start := len(e.keys)
	for k := range m {
		if lvl == configMeta && slices.Contains(serverFields, k) || lvl == configAnnotations && k == AppliedHashAnnotation {
			continue
		}
		e.keys = append(e.keys, k)
	}
	if lvl == configMeta {
		e.keys = append(e.keys, "ownerReferences")
	}
	end := len(e.keys)
	slices.Sort(e.keys[start:end]) // json.Marshal sorts keys by their bytes too
	e.buf = append(e.buf, '{')
	// Nested maps append their keys after end and cut them off again, so e.keys[start:end]
	// holds, though e.keys may move.
	for i := start; i < end; i++ {
		k := e.keys[i]
		if i > start {
			e.buf = append(e.buf, ',')
		}
		if err := e.string(k); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		var err error
		switch v := m[k]; {
		case lvl == configTop && k == "metadata":
			err = e.object(v.(map[string]any), configMeta, owner)
		case lvl == configMeta && k == "ownerReferences":
			err = e.ownerReferences(owner)
		case lvl == configMeta && k == "annotations" && v != nil:
			err = e.object(v.(map[string]any), configAnnotations, nil)
		default:
			err = e.value(v)
		}
		if err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	e.keys = e.keys[:start]
	return nil
}

// ownerReferences writes the ownerReferences setOwner gives a configuration that lists none:
// owner as the ControllerRef, keys in order.
func (e *canonicalEncoder) ownerReferences(owner *metav1.OwnerReference) error {
	for _, f := range [...]struct{ key, value string }{
		{`[{"apiVersion":`, owner.APIVersion}, {`,"blockOwnerDeletion":true,"controller":true,"kind":`, owner.Kind},
		{`,"name":`, owner.Name}, {`,"uid":`, string(owner.UID)},
	} {
		e.buf = append(e.buf, f.key...)
		if err := e.string(f.value); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, "}]"...)
	return nil
}

// string writes s quoted; json.Marshal writes strings with a byte it escapes (quotes,
// backslashes, control characters, <, > and &, non-ASCII) itself.
func (e *canonicalEncoder) string(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, err := json.Marshal(s)
			if err != nil {
				return err
			}
			e.buf = append(e.buf, raw...)
			return nil
		}
	}
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, '"')
	return nil
}
