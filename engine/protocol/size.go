package protocol

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxObjectBytes is the most the API server takes in one request body (its
// --max-request-bytes default): an object larger than that as JSON can never be written, so
// an answer holding one is refused before it is encoded for a write that would fail.
const MaxObjectBytes = 3 << 20

// jsonSize is about how many bytes v takes as JSON, counted until the count passes limit
// (then it returns at once, with the count so far). It allocates nothing: a string counts
// its length and quotes, escapes aside; a number counts as 8.
func jsonSize(v any, limit int64) int64 {
	var n int64
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			n += int64(len(x)) + 2
		case map[string]any:
			n += 2
			for k, e := range x {
				n += int64(len(k)) + 4
				if n > limit || !walk(e) {
					return false
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				n++
				if n > limit || !walk(e) {
					return false
				}
			}
		case bool, nil:
			n += 5
		default:
			n += 8
		}
		return n <= limit
	}
	walk(v)
	return n
}

// checkSize refuses an object the API server would not take.
func checkSize(path string, obj map[string]any) error {
	if n := jsonSize(obj, MaxObjectBytes); n > MaxObjectBytes {
		return Invalid(path, "is more than %s as JSON, over the %s the API server takes in one request: it can never be written",
			quantity(n), quantity(MaxObjectBytes))
	}
	return nil
}

func quantity(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMi", n>>20)
	}
	return resource.NewQuantity(n, resource.BinarySI).String()
}
