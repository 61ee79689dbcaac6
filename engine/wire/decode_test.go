package wire

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	kjson "sigs.k8s.io/json"
)

// reference is how apimachinery decodes an unstructured object.
func reference(data []byte) (map[string]any, error) {
	var m map[string]any
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m)
	return m, err
}

var decodeCases = []struct{ name, in string }{
	{"empty", `{}`},
	{"nested", `{"a":{"b":[1,2,{"c":null}],"d":true,"e":false},"f":[]}`},
	{"white space", " \t\n{ \"a\" :\r[ 1 , \"x\" ] } \n"},
	{"ints", `{"a":0,"b":-0,"c":123456789012345678,"d":-9223372036854775808,"e":9223372036854775807}`},
	{"int overflow is a float", `{"a":9223372036854775808,"b":-9223372036854775809,"c":123456789012345678901234}`},
	{"floats", `{"a":1.5,"b":-0.25,"c":1e3,"d":1E-3,"e":2.5e+10,"f":1.0,"g":0.1}`},
	{"escapes", `{"a":"q\"b\\s\/n\nr\rt\tb\bf\f","b":"\u00e9\u4e2d","c":"\ud83d\ude00"}`},
	{"lone surrogates", `{"a":"\ud83d","b":"\ude00x","c":"\ud83d\u0041","d":"\ud83dx"}`},
	{"utf-8", `{"a":"héllo 中文 😀"}`},
	{"invalid utf-8", "{\"a\":\"x\xffy\xc3\"}"},
	{"duplicate keys: the last wins", `{"a":1,"a":2}`},
	{"known keys", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"app":"y"}}}`},
	{"escaped key", `{"a\"b":1,"\u006b\u0069\u006e\u0064":"K"}`},
}

var invalidCases = []string{
	``, `[]`, `"x"`, `1`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}x`, `{"a":[1,]}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":nul}`,
	`{"a":"x`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12"}`, `{a:1}`, `{"a":1 "b":2}`,
	`{"a":1e999}`,
}

func TestDecodeMatchesApimachinery(t *testing.T) {
	for _, c := range decodeCases {
		t.Run(c.name, func(t *testing.T) { same(t, []byte(c.in)) })
	}
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata/*.json")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) { same(t, data) })
	}
}

func same(t *testing.T, data []byte) {
	t.Helper()
	want, werr := reference(data)
	got, err := Decode(data)
	if werr != nil {
		t.Fatalf("reference refuses %q: %v", data, werr)
	}
	if err != nil {
		t.Fatalf("Decode(%q): %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q)\n got %#v\nwant %#v", data, got, want)
	}
}

func TestDecodeRefusesWhatIsNotAnObject(t *testing.T) {
	for _, in := range invalidCases {
		if m, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) = %v, want an error", in, m)
		}
	}
}

func TestDecodeDepth(t *testing.T) {
	deep := make([]byte, 0, 2*maxDepth+10)
	deep = append(deep, `{"a":`...)
	for range maxDepth {
		deep = append(deep, '[')
	}
	if _, err := Decode(deep); err != errDepth {
		t.Fatalf("Decode of %d nested arrays: %v, want %v", maxDepth+1, err, errDepth)
	}
}

// FuzzDecode checks that Decode accepts what apimachinery accepts and gives the same values.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c.in))
	}
	for _, in := range invalidCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := reference(data)
		got, err := Decode(data)
		if werr != nil {
			if err == nil {
				t.Fatalf("Decode(%q) = %v, but the reference refuses it: %v", data, got, werr)
			}
			return
		}
		if want == nil {
			return // a null: apimachinery gives a nil map, Decode wants an object
		}
		if err != nil {
			t.Fatalf("Decode(%q): %v; the reference gives %#v", data, err, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q)\n got %#v\nwant %#v", data, got, want)
		}
	})
}
