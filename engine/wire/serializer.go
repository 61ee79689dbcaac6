package wire

import (
	"fmt"
	"io"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// serializer decodes JSON into unstructured objects and lists with Decode, and watch event
// envelopes without decoding their object twice, in the shape given (see decode);
// everything else (typed objects such as metav1.Status, and every encoding) goes to
// apimachinery's JSON serializer, next.
type serializer struct {
	next   *json.Serializer
	scheme *runtime.Scheme // the meta/v1 types a dynamic client decodes typed
	shape  shape
}

var _ runtime.Serializer = serializer{}

func (s serializer) Identifier() runtime.Identifier { return s.next.Identifier() }

// Encode writes what apimachinery's JSON serializer writes, encoding unstructured objects
// with Encode.
func (s serializer) Encode(obj runtime.Object, w io.Writer) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.Object == nil {
		return s.next.Encode(obj, w)
	}
	bp := encodeBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 { // a rare huge object's buffer is not kept
			encodeBuffers.Put(bp)
		}
	}()
	b, err := Encode((*bp)[:0], u.Object)
	if err != nil {
		return err
	}
	*bp = append(b, '\n')
	_, err = w.Write(*bp)
	return err
}

// encodeBuffers hands out buffers for Encode.
var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Decode decodes data into into when it is an *unstructured.Unstructured, an
// *unstructured.UnstructuredList or a *metav1.WatchEvent, and into a new
// *unstructured.Unstructured when into is nil and data's kind is not a meta/v1 type. Errors
// are those apimachinery's decoder gives for the same input: a syntax error, or a missing
// kind or version.
func (s serializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if defaults != nil {
		return s.next.Decode(data, defaults, into)
	}
	switch into := into.(type) {
	case *unstructured.Unstructured:
		m, err := decode(data, s.shape)
		if err != nil {
			return nil, nil, err
		}
		into.Object = m
		gvk := into.GroupVersionKind()
		if gvk.Kind == "" {
			return nil, &gvk, runtime.NewMissingKindErr(string(data))
		}
		return into, &gvk, nil
	case *unstructured.UnstructuredList:
		m, err := decode(data, s.shape)
		if err != nil {
			return nil, nil, err
		}
		if err := fillList(into, m); err != nil {
			return nil, nil, err
		}
		gvk := into.GroupVersionKind()
		if gvk.Kind == "" {
			return nil, &gvk, runtime.NewMissingKindErr(string(data))
		}
		return into, &gvk, nil
	case *metav1.WatchEvent:
		if err := envelope(data, into); err != nil {
			return nil, nil, err
		}
		gvk := metav1.SchemeGroupVersion.WithKind("WatchEvent")
		return into, &gvk, nil
	case nil:
		m, err := decode(data, s.shape)
		if err != nil {
			return nil, nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		gvk := u.GroupVersionKind()
		switch {
		case gvk.Kind == "":
			return nil, &gvk, runtime.NewMissingKindErr(string(data))
		case gvk.Version == "":
			return nil, &gvk, runtime.NewMissingVersionErr(string(data))
		case s.scheme.Recognizes(gvk):
			return s.next.Decode(data, nil, nil) // a Status in an error event, typed
		}
		return u, &gvk, nil
	}
	return s.next.Decode(data, nil, into)
}

// fillList makes list of a decoded list, as apimachinery does: items become Unstructured,
// and items without apiVersion and kind get the list's, less its "List" suffix.
func fillList(list *unstructured.UnstructuredList, m map[string]any) error {
	items, _ := m["items"].([]any)
	delete(m, "items")
	list.Object = m
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	kind = strings.TrimSuffix(kind, "List")
	list.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("wire: an item of a %s is not an object", kind+"List")
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(kind)
			u.SetAPIVersion(apiVersion)
		}
		list.Items = append(list.Items, u)
	}
	return nil
}
