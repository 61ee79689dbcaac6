package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/stdlib/jsontext"
)

// canonicalHash returns the hex SHA-256 of json.Marshal(v), byte for byte, for v of the
// shape normalizedCopy gives (maps, slices, strings, booleans, nil, int64, float64). It
// encodes those directly, without reflection, because every sync of every child hashes its
// configuration; strings and floats are written as encoding/json writes them
// (stdlib/jsontext), any other type by json.Marshal itself, so the bytes never differ. An
// error is json.Marshal's.
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
// owner, computed from desired in place: desired must satisfy inPlace. It is errNotNormalized
// when a value of desired does not have the shape normalizedCopy gives, so that the
// configuration would not share it.
func configHash(owner *metav1.OwnerReference, desired map[string]any) (hexHash, error) {
	e := canonicalEncoders.Get().(*canonicalEncoder)
	defer e.release()
	e.strict = true
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
	// entries holds the entries of the maps being written, sorted by key, the innermost last.
	entries []entry
	// strict refuses a value normalizedCopy would change (errNotNormalized).
	strict bool
}

type entry struct {
	key   string
	value any
}

// errNotNormalized is a strict encoder's refusal.
var errNotNormalized = errors.New("not in normalized form")

// maxPooledBuffer bounds the buffer an encoder keeps when it goes back to the pool.
const maxPooledBuffer = 64 << 10

var canonicalEncoders = sync.Pool{New: func() any { return &canonicalEncoder{buf: make([]byte, 0, 1024)} }}

// release returns e to the pool, once nothing reads its buffer any more.
func (e *canonicalEncoder) release() {
	if cap(e.buf) > maxPooledBuffer {
		return
	}
	clear(e.entries[:cap(e.entries)]) // hold no values
	e.buf, e.entries, e.strict = e.buf[:0], e.entries[:0], false
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
		e.buf = jsontext.AppendString(e.buf, x, true)
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
	case float64:
		if e.strict && !isNormalized(x) {
			return errNotNormalized
		}
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return e.marshal(v) // json.Marshal's error
		}
		e.buf = jsontext.AppendFloat(e.buf, x)
	default:
		if e.strict {
			return errNotNormalized
		}
		return e.marshal(v)
	}
	return nil
}

// marshal writes what json.Marshal writes for v.
func (e *canonicalEncoder) marshal(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.buf = append(e.buf, raw...)
	return nil
}

// object writes m as the map at lvl; owner is the configuration's owner at configTop and
// configMeta, where m has no ownerReferences of its own.
func (e *canonicalEncoder) object(m map[string]any, lvl level, owner *metav1.OwnerReference) error {
	start := len(e.entries)
	for k, v := range m {
		if lvl == configMeta && slices.Contains(serverFields, k) || lvl == configAnnotations && k == AppliedHashAnnotation {
			continue
		}
		e.entries = append(e.entries, entry{k, v})
	}
	if lvl == configMeta {
		e.entries = append(e.entries, entry{key: "ownerReferences"})
	}
	end := len(e.entries)
	// json.Marshal sorts keys by their bytes too.
	slices.SortFunc(e.entries[start:end], func(a, b entry) int { return strings.Compare(a.key, b.key) })
	e.buf = append(e.buf, '{')
	// Nested maps append their entries after end and cut them off again, so
	// e.entries[start:end] holds, though e.entries may move.
	for i := start; i < end; i++ {
		k, v := e.entries[i].key, e.entries[i].value
		if i > start {
			e.buf = append(e.buf, ',')
		}
		e.buf = jsontext.AppendString(e.buf, k, true)
		e.buf = append(e.buf, ':')
		var err error
		switch {
		case lvl == configTop && k == "metadata":
			err = e.object(v.(map[string]any), configMeta, owner) // inPlace checked it
		case lvl == configMeta && k == "ownerReferences":
			e.ownerReferences(owner)
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
	e.entries = e.entries[:start]
	return nil
}

// ownerReferences writes the ownerReferences setOwner gives a configuration that lists none:
// owner as the ControllerRef, keys in order.
func (e *canonicalEncoder) ownerReferences(owner *metav1.OwnerReference) {
	for _, f := range [...]struct{ key, value string }{
		{`[{"apiVersion":`, owner.APIVersion}, {`,"blockOwnerDeletion":true,"controller":true,"kind":`, owner.Kind},
		{`,"name":`, owner.Name}, {`,"uid":`, string(owner.UID)},
	} {
		e.buf = append(e.buf, f.key...)
		e.buf = jsontext.AppendString(e.buf, f.value, true)
	}
	e.buf = append(e.buf, "}]"...)
}
