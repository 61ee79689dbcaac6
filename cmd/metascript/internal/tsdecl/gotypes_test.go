package tsdecl

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The types below exercise each rule of goTypes; testdata/gotypes.d.ts is what they give.

// sample is documented.
type sample struct {
	Plain      string           `json:"plain"`
	Omitted    int64            `json:"omitted,omitempty"`
	Nullable   []string         `json:"nullable,omitempty" ts:"null"`
	Pointer    *inner           `json:"pointer,omitempty"`
	NullInMap  map[string]*bool `json:"nullInMap"`
	Override   string           `json:"override" tstype:"\"a\" | \"b\""`
	Named      namedMap         `json:"named"`
	Any        any              `json:"any"`
	Rest       map[string]any   `json:"-" ts:"index"`
	Skipped    string           `json:"-"`
	inner                       // embedded: its fields in its place
	unexported string
}

type inner struct {
	Depth float64 `json:"depth"`
}

type namedMap map[string][]*inner

func TestGoTypes(t *testing.T) {
	docs := map[string]string{"sample": "sample is documented.", "sample.Plain": "Plain is\ntwo lines.", "namedMap": "namedMap maps."}
	g := newGoTypes(reflect.TypeFor[sample]().PkgPath(), func(typ, field string) string {
		if field != "" {
			typ += "." + field
		}
		return docs[typ]
	})
	if name, err := g.ref(reflect.TypeFor[sample]()); err != nil || name != "sample" {
		t.Fatalf("ref = %q, %v", name, err)
	}
	w := &writer{}
	if err := g.write(w); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/gotypes.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	if w.String() != string(want) {
		t.Errorf("declarations:\n%s\nwant testdata/gotypes.d.ts:\n%s", w, want)
	}
}

func TestGoTypesRefuses(t *testing.T) {
	type intKeys struct {
		M map[int]string `json:"m"`
	}
	type badIndex struct {
		R string `json:"-" ts:"index"`
	}
	type badTag struct {
		R string `json:"r" ts:"maybe"`
	}
	type channel struct {
		C chan int `json:"c"`
	}
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[intKeys](), "map keys must be strings"},
		{reflect.TypeFor[badIndex](), `ts:"index" needs a map`},
		{reflect.TypeFor[badTag](), `unknown ts tag "maybe"`},
		{reflect.TypeFor[channel](), "no TypeScript spelling"},
	} {
		g := newGoTypes(tc.typ.PkgPath(), func(string, string) string { return "" })
		g.seen[tc.typ], g.todo = true, []reflect.Type{tc.typ}
		err := g.write(&writer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.typ.Name(), err, tc.want)
		}
	}
}
