package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var encodeValues = []any{
	nil, true, false, "", "plain", "q\"b\\s/\n\r\t\b\f\x01\x1f", "<a href='x'>&amp;</a>", "é中😀",
	"bad \xff utf-8 \xc3", "line\u2028para\u2029", int64(0), int64(-42), int64(math.MaxInt64),
	int64(math.MinInt64), 7, int32(-3), 0.0, -0.0, 1.5, 0.1, 1e20, 1e21, 1.5e-6, 1e-7, -2.5e-9,
	123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, float32(0.25), uint8(9),
	map[string]any(nil), map[string]any{}, []any(nil), []any{},
	map[string]any{"b": int64(1), "a": []any{"x", nil, map[string]any{"z": 1.25, "y": false}}, "A": "upper", "é": "k"},
	[]string{"typed", "slice"}, map[string]string{"typed": "map"},
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	for _, v := range encodeValues {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(nil, v)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Encode(%#v)\n got %s\nwant %s", v, got, want)
		}
	}
	files, _ := filepath.Glob("testdata/*.json")
	for _, f := range files {
		m, err := Decode(read(t, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(m)
		got, err := Encode(nil, m)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: Encode differs from encoding/json (%v)\n got %s\nwant %s", f, err, got, want)
		}
	}
}

func TestEncodeRefusesWhatJSONCannotHold(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"a": []any{math.Inf(-1)}}} {
		if _, err := Encode(nil, v); err == nil {
			t.Errorf("Encode(%v) gives no error", v)
		}
	}
}

func TestSerializerEncodesAsClientGo(t *testing.T) {
	stock, ours := stockJSON(t).Serializer, jsonInfo(t, negotiated(whole)).Serializer
	for _, f := range []string{"configmap.json", "fanout.json"} {
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(read(t, f)); err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if err := stock.Encode(&u, &want); err != nil {
			t.Fatal(err)
		}
		if err := ours.Encode(&u, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s:\n got %s\nwant %s", f, got.Bytes(), want.Bytes())
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(read(b, "configmap.json")); err != nil {
		b.Fatal(err)
	}
	for _, s := range serializers(b)[:2] {
		b.Run(s.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := s.info.Serializer.Encode(&u, &buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
