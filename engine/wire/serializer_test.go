package wire

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
)

// stockJSON is client-go's own dynamic client's JSON serializer, the reference.
func stockJSON(t testing.TB) runtime.SerializerInfo {
	return jsonInfo(t, dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer)
}

func jsonInfo(t testing.TB, ns runtime.NegotiatedSerializer) runtime.SerializerInfo {
	for _, info := range ns.SupportedMediaTypes() {
		if info.MediaType == "application/json" {
			return info
		}
	}
	t.Fatal("no application/json")
	return runtime.SerializerInfo{}
}

func read(t testing.TB, name string) []byte {
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSerializerDecodesAsClientGo(t *testing.T) {
	stock, ours := stockJSON(t).Serializer, jsonInfo(t, negotiated(whole)).Serializer
	cases := []struct {
		file string
		into func() runtime.Object
	}{
		{"configmap.json", func() runtime.Object { return &unstructured.Unstructured{} }},
		{"fanout.json", func() runtime.Object { return &unstructured.Unstructured{} }},
		{"list.json", func() runtime.Object { return &unstructured.UnstructuredList{} }},
		{"configmap.json", func() runtime.Object { return nil }},
		{"status.json", func() runtime.Object { return nil }},
		{"list.json", func() runtime.Object { return nil }},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s into %T", c.file, c.into()), func(t *testing.T) {
			data := read(t, c.file)
			want, wantGVK, werr := stock.Decode(data, nil, c.into())
			got, gotGVK, err := ours.Decode(data, nil, c.into())
			if werr != nil || err != nil {
				t.Fatalf("errors: client-go %v, ours %v", werr, err)
			}
			if !reflect.DeepEqual(got, want) || *gotGVK != *wantGVK {
				t.Fatalf("got %T %v %#v\nwant %T %v %#v", got, gotGVK, got, want, wantGVK, want)
			}
		})
	}
}

func TestSerializerErrorsAsClientGo(t *testing.T) {
	stock, ours := stockJSON(t).Serializer, jsonInfo(t, negotiated(whole)).Serializer
	for _, in := range []string{`{"apiVersion":"v1"}`, `{"kind":"ConfigMap"}`, `{"kind":`, `[]`} {
		_, _, werr := stock.Decode([]byte(in), nil, nil)
		_, _, err := ours.Decode([]byte(in), nil, nil)
		if (werr == nil) != (err == nil) || runtime.IsMissingKind(werr) != runtime.IsMissingKind(err) ||
			runtime.IsMissingVersion(werr) != runtime.IsMissingVersion(err) {
			t.Errorf("Decode(%q): client-go %v, ours %v", in, werr, err)
		}
	}
}

// watchStream is events as the API server writes them, one JSON object per line.
func watchStream(t testing.TB, n int) []byte {
	var b bytes.Buffer
	cm := bytes.TrimSpace(read(t, "configmap.json"))
	status := bytes.TrimSpace(read(t, "status.json"))
	for i := range n {
		switch {
		case i%50 == 49:
			fmt.Fprintf(&b, `{"type":"ERROR","object":%s}`+"\n", status)
		case i%2 == 0:
			fmt.Fprintf(&b, `{"type":"ADDED","object":%s}`+"\n", cm)
		default:
			fmt.Fprintf(&b, "{\"object\": %s ,\n \"type\":\"MODIFIED\"}\n", bytes.ReplaceAll(cm, []byte(`"p-0017-3"`), []byte(`"a \"}{\\\" name"`)))
		}
	}
	return b.Bytes()
}

type event struct {
	Type   watch.EventType
	Object runtime.Object
}

func decodeWatch(t testing.TB, info runtime.SerializerInfo, r io.Reader) []event {
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(r))
	d := restwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), info.Serializer)
	var events []event
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return events
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(events), err)
		}
		events = append(events, event{typ, obj})
	}
}

func TestWatchDecodesAsClientGo(t *testing.T) {
	stream := watchStream(t, 120)
	want := decodeWatch(t, stockJSON(t), bytes.NewReader(stream))
	if len(want) != 120 {
		t.Fatalf("client-go decoded %d events, want 120", len(want))
	}
	if _, ok := want[49].Object.(*metav1.Status); !ok {
		t.Fatalf("client-go decodes an ERROR event's object as %T", want[49].Object)
	}
	for name, r := range map[string]io.Reader{
		"whole":         bytes.NewReader(stream),
		"byte by byte":  iotest.OneByteReader(bytes.NewReader(stream)),
		"half and half": iotest.HalfReader(bytes.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			got := decodeWatch(t, jsonInfo(t, negotiated(whole)), r)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("events differ: got %d, want %d; first got %#v", len(got), len(want), got[0])
			}
		})
	}
}

func TestWatchStreamCutShort(t *testing.T) {
	stream := watchStream(t, 2)
	cut := stream[:len(stream)-10]
	frames := framer{}.NewFrameReader(io.NopCloser(bytes.NewReader(cut)))
	d := restwatch.NewDecoder(streaming.NewDecoder(frames, jsonInfo(t, negotiated(whole)).StreamSerializer.Serializer), jsonInfo(t, negotiated(whole)).Serializer)
	if _, _, err := d.Decode(); err != nil {
		t.Fatalf("first event: %v", err)
	}
	if _, _, err := d.Decode(); err != io.ErrUnexpectedEOF {
		t.Fatalf("a cut event: %v, want %v", err, io.ErrUnexpectedEOF)
	}
	frames = framer{}.NewFrameReader(io.NopCloser(strings.NewReader(`"x"`)))
	if _, err := frames.Read(make([]byte, 10)); err == nil {
		t.Fatal("a frame that is not an object reads without an error")
	}
}

func TestAnswersAndCacheLeaveOutManagedFields(t *testing.T) {
	withoutManaged := func(t *testing.T, u *unstructured.Unstructured) {
		t.Helper()
		if _, ok := u.GetObjectKind().(*unstructured.Unstructured).Object["metadata"].(map[string]any)["managedFields"]; ok {
			t.Errorf("%s keeps managedFields", u.GetName())
		}
		if u.GetName() == "" || u.GetUID() == "" {
			t.Errorf("metadata lost: %v", u.Object["metadata"])
		}
	}
	for _, sh := range []shape{answer, cached} {
		leavesOutManagedFields(t, jsonInfo(t, negotiated(sh)), withoutManaged)
	}
}

func leavesOutManagedFields(t *testing.T, drop runtime.SerializerInfo, withoutManaged func(*testing.T, *unstructured.Unstructured)) {
	t.Helper()
	obj, _, err := drop.Serializer.Decode(read(t, "configmap.json"), nil, &unstructured.Unstructured{})
	if err != nil {
		t.Fatal(err)
	}
	withoutManaged(t, obj.(*unstructured.Unstructured))
	if obj.(*unstructured.Unstructured).Object["data"].(map[string]any)["index"] != "3" {
		t.Errorf("data lost: %v", obj)
	}

	list, _, err := drop.Serializer.Decode(bytes.ReplaceAll(list(t, 3), []byte(`"metadata":{"resourceVersion":"9"}`), []byte(`"metadata":{"resourceVersion":"9","managedFields":[]}`)), nil, &unstructured.UnstructuredList{})
	if err != nil {
		t.Fatal(err)
	}
	items := list.(*unstructured.UnstructuredList).Items
	if len(items) != 3 {
		t.Fatalf("%d items, want 3", len(items))
	}
	for i := range items {
		withoutManaged(t, &items[i])
	}

	for _, ev := range decodeWatch(t, drop, bytes.NewReader(watchStream(t, 4))) {
		withoutManaged(t, ev.Object.(*unstructured.Unstructured))
	}

	// Only an object's own metadata loses them.
	nested := []byte(`{"apiVersion":"v1","kind":"K","metadata":{"name":"n","uid":"u"},"spec":{"metadata":{"managedFields":[1]}}}`)
	obj, _, err = drop.Serializer.Decode(nested, nil, &unstructured.Unstructured{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*unstructured.Unstructured).Object["spec"].(map[string]any)["metadata"].(map[string]any)["managedFields"]; !ok {
		t.Errorf("a spec's field named metadata.managedFields was dropped: %v", obj)
	}
}
