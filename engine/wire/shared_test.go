package wire

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"
)

// child is a cached child of parent p: its labels and ownerReferences depend on p alone.
func child(p, i int, spaced bool) []byte {
	labels := fmt.Sprintf(`{"app":"p%d"}`, p)
	if spaced {
		labels = fmt.Sprintf(`{ "app": "p%d" }`, p)
	}
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p%d-%d","namespace":"ns","labels":%s,`+
		`"ownerReferences":[{"apiVersion":"x/v1","kind":"P","name":"p%d","uid":"u%d","controller":true}],`+
		`"managedFields":[{"manager":"m"}]},"data":{"i":"%d"}}`, p, i, labels, p, p, i)
}

// sameValue reports whether a and b are the one map or slice.
func sameValue(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }

func TestCacheDecodingSharesWhatObjectsHoldAlike(t *testing.T) {
	decodeAll := func(sh shape, in ...[]byte) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, data := range in {
			m, err := decode(data, sh)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := reference(data)
			delete(want["metadata"].(map[string]any), "managedFields")
			if sh != whole && !reflect.DeepEqual(m, want) {
				t.Fatalf("decode(%s)\n got %#v\nwant %#v", data, m, want)
			}
			out = append(out, m)
		}
		return out
	}
	meta := func(m map[string]any, k string) any { return m["metadata"].(map[string]any)[k] }

	got := decodeAll(cached, child(1, 0, false), child(1, 1, false), child(2, 0, false), child(1, 2, true))
	for _, k := range []string{"labels", "ownerReferences"} {
		if !sameValue(meta(got[0], k), meta(got[1], k)) {
			t.Errorf("two children of one parent hold separate %s", k)
		}
		if sameValue(meta(got[0], k), meta(got[2], k)) {
			t.Errorf("children of two parents share %s", k)
		}
	}
	if sameValue(meta(got[0], "labels"), meta(got[3], "labels")) {
		t.Error("labels written differently are shared") // text is the key; harmless, but not expected
	}
	if !sameValue(meta(got[0], "ownerReferences"), meta(got[3], "ownerReferences")) {
		t.Error("equal ownerReferences next to differently written labels are not shared")
	}
	if sameValue(got[0]["data"], got[1]["data"]) {
		t.Error("data is shared")
	}
	sameString := func(a, b any) bool { return unsafe.StringData(a.(string)) == unsafe.StringData(b.(string)) }
	if !sameString(got[0]["kind"], got[2]["kind"]) || !sameString(meta(got[0], "namespace"), meta(got[2], "namespace")) {
		t.Error("objects of one kind and namespace hold separate copies of them")
	}
	if sameString(meta(got[0], "name"), meta(got[1], "name")) {
		t.Error("names are shared")
	}

	for _, sh := range []shape{whole, answer} {
		plain := decodeAll(sh, child(3, 0, false), child(3, 1, false))
		if sameValue(meta(plain[0], "labels"), meta(plain[1], "labels")) {
			t.Errorf("shape %d shares labels: its results must be the caller's own", sh)
		}
		if held := meta(plain[0], "managedFields") != nil; held != (sh == whole) {
			t.Errorf("shape %d: managedFields held %v", sh, held)
		}
	}
}

func TestSharedSubtreesAreBounded(t *testing.T) {
	s := &sharedSubtrees{cur: map[string]any{}}
	n := 0
	fill := func(count int) {
		for range count {
			s.put(fmt.Appendf(nil, "%d", n), []any{n})
			n++
		}
	}
	first := []any{"first"}
	s.put([]byte("first"), first)
	fill(sharedMax) // first is in the old generation now
	if _, ok := s.cur["first"]; ok {
		t.Fatal("the current generation outgrew its bound")
	}
	if v, ok := s.get([]byte("first")); !ok || !sameValue(v, first) {
		t.Fatal("lost a value of the old generation")
	}
	fill(sharedMax) // used again, first moved to the current generation, so it survives
	if _, ok := s.get([]byte("first")); !ok {
		t.Fatal("lost a value used in the generation before")
	}
	fill(3 * sharedMax)
	if _, ok := s.get([]byte("first")); ok {
		t.Error("kept a value unused for two generations")
	}
	if len(s.cur) > sharedMax || len(s.old) > sharedMax {
		t.Errorf("holds %d + %d values, want at most %d each", len(s.cur), len(s.old), sharedMax)
	}
	if _, ok := s.get(fmt.Appendf(nil, "%d", n-1)); !ok {
		t.Error("lost the latest value")
	}
}
