package jsontext

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s/\n\r\t\b\f\x01\x1f", "<a href='x'>&amp;</a>",
		"é中😀", "bad \xff utf-8 \xc3", "line\u2028para\u2029"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s, true); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q, html)\n got %s\nwant %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := AppendString(nil, s, false); !bytes.Equal(got, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) {
			t.Errorf("AppendString(%q)\n got %s\nwant %s", s, got, buf.Bytes())
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1.5, 0.1, 1e20, 1e21, 1.5e-6, 1e-7, -2.5e-9,
		123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := AppendFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

// FuzzAppendString: whatever the string, AppendString writes what encoding/json writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"plain", "q\"b\\s\n", "<a>&", "é中😀", "bad \xff", "line\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q, html)\n got %s\nwant %s", s, got, want)
		}
	})
}

// BenchmarkAppendString: the strings of a Kubernetes object, which rarely need an escape.
func BenchmarkAppendString(b *testing.B) {
	for _, s := range []string{"metascript.dev/applied-hash", "p-0017-3", "6c1f8e4a-2b3d-4e5f-8a9b-0c1d2e3f4a5b",
		"a value with \"quotes\" and <html>"} {
		b.Run(s[:min(len(s), 12)], func(b *testing.B) {
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = AppendString(buf[:0], s, true)
			}
		})
	}
}
