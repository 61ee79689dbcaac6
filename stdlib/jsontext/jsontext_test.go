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
