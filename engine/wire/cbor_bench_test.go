package wire

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
)

// BenchmarkDecodeCBOR decodes the same objects as BenchmarkDecode, sent as CBOR: what a
// client gains when the API server serves CBOR (its CBORServingAndStorage gate) and
// client-go asks for it (ClientsAllowCBOR, ClientsPreferCBOR).
func BenchmarkDecodeCBOR(b *testing.B) {
	s := cbor.NewSerializer(creater{metaScheme}, typer{metaScheme})
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(read(b, "configmap.json")); err != nil {
		b.Fatal(err)
	}
	var one bytes.Buffer
	if err := s.Encode(&obj, &one); err != nil {
		b.Fatal(err)
	}
	answer := one.Bytes()
	b.Run("answer", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if _, _, err := s.Decode(answer, nil, &unstructured.Unstructured{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	listJSON := list(b, 1000)
	var l unstructured.UnstructuredList
	if err := l.UnmarshalJSON(listJSON); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Encode(&l, &buf); err != nil {
		b.Fatal(err)
	}
	b.Run("list", func(b *testing.B) {
		b.SetBytes(int64(buf.Len()))
		for b.Loop() {
			if _, _, err := s.Decode(buf.Bytes(), nil, &unstructured.UnstructuredList{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
