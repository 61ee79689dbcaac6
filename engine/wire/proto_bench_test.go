package wire

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkDecodeProtobuf decodes the ConfigMap of BenchmarkDecode's answer as the API
// server sends it in protobuf (what a typed client of a built-in resource asks for): into
// the typed object a typed informer would hold, and on into the unstructured object every
// part of the engine reads (hooks' requests, the apply's comparisons, the indexes).
func BenchmarkDecodeProtobuf(b *testing.B) {
	var cm corev1.ConfigMap
	if err := runtime.DecodeInto(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), read(b, "configmap.json"), &cm); err != nil {
		b.Fatal(err)
	}
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var buf bytes.Buffer
	if err := s.Encode(&cm, &buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.Run("answer/typed", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := s.Decode(data, nil, &corev1.ConfigMap{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("answer/unstructured", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var typed corev1.ConfigMap
			if _, _, err := s.Decode(data, nil, &typed); err != nil {
				b.Fatal(err)
			}
			typed.ManagedFields = nil // as the cache's JSON decoding leaves them out
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&typed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
