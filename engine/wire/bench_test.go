package wire

import (
	"bytes"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The engine's decoding against client-go's dynamic client's, on the same bytes:
//
//	go test -run '^$' -bench . -benchmem ./engine/wire/
func BenchmarkDecode(b *testing.B) {
	for _, s := range serializers(b) {
		b.Run("watch/"+s.name, func(b *testing.B) {
			stream := watchStream(b, 1000)
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				decodeWatch(b, s.info, bytes.NewReader(stream))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/event")
		})
		b.Run("answer/"+s.name, func(b *testing.B) {
			data := read(b, "configmap.json")
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, _, err := s.info.Serializer.Decode(data, nil, &unstructured.Unstructured{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("list/"+s.name, func(b *testing.B) {
			data := list(b, 1000)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, _, err := s.info.Serializer.Decode(data, nil, &unstructured.UnstructuredList{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func serializers(b *testing.B) []struct {
	name string
	info runtime.SerializerInfo
} {
	return []struct {
		name string
		info runtime.SerializerInfo
	}{{"client-go", stockJSON(b)}, {"wire", jsonInfo(b, negotiated(whole))},
		{"wire-answer", jsonInfo(b, negotiated(answer))}, {"wire-cache", jsonInfo(b, negotiated(cached))}}
}

// list is a ConfigMapList of n items, in families of five children of one parent.
func list(t testing.TB, n int) []byte {
	var b bytes.Buffer
	cm := bytes.TrimSpace(read(t, "configmap.json"))
	b.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		item := bytes.Replace(cm, []byte(`"p-0017-3"`), fmt.Appendf(nil, `"cm-%d"`, i), 1)
		b.Write(bytes.ReplaceAll(item, []byte(`"p-0017"`), fmt.Appendf(nil, `"p-%04d"`, i/5)))
	}
	b.WriteString("]}")
	return b.Bytes()
}
