package hooks

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"metascript.dev/metascript/engine/kinds"
)

// jsonFields are the JSON names of t's fields, embedded structs' included, as
// encoding/json names them.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestHooksAreTheDescriptors: every hook every kind declares has an entry in Hooks whose
// request and response structs have exactly the top-level fields the kind's descriptor
// says the engine sends and accepts, and Hooks has no other entry.
func TestHooksAreTheDescriptors(t *testing.T) {
	used := map[int]bool{}
	for _, d := range kinds.All {
		kind := strings.TrimPrefix(d.Kind, "Namespaced") // a twin has its kind's hooks
		for _, h := range d.Hooks {
			i := slices.IndexFunc(Hooks, func(e Hook) bool { return e.Kind == kind && e.Name == h.Name })
			if i < 0 {
				t.Errorf("%s hook %s: no entry in Hooks", d.Kind, h.Name)
				continue
			}
			used[i] = true
			e := Hooks[i]
			if got, want := sorted(jsonFields(e.Request)), sorted(h.Request); !slices.Equal(got, want) {
				t.Errorf("%s hook %s: %s has fields %v, the engine sends %v", d.Kind, h.Name, e.Request.Name(), got, want)
			}
			if got, want := sorted(jsonFields(e.Response)), sorted(h.Response); !slices.Equal(got, want) {
				t.Errorf("%s hook %s: %s has fields %v, the engine accepts %v", d.Kind, h.Name, e.Response.Name(), got, want)
			}
		}
	}
	for i, e := range Hooks {
		if !used[i] {
			t.Errorf("Hooks[%d] (%s %s) is no hook of any kind", i, e.Kind, e.Name)
		}
	}
}

// TestEveryFieldIsDocumented: every struct the hooks reach, and each of its fields, has a
// doc comment, which the TypeScript declarations carry.
func TestEveryFieldIsDocumented(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var visit func(reflect.Type)
	visit = func(rt reflect.Type) {
		if seen[rt] {
			return
		}
		seen[rt] = true
		if rt.PkgPath() == reflect.TypeFor[Hook]().PkgPath() && Doc(rt.Name(), "") == "" {
			t.Errorf("type %s has no doc comment", rt.Name())
		}
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice:
			visit(rt.Elem())
		case reflect.Map:
			visit(rt.Key())
			visit(rt.Elem())
		case reflect.Struct:
			for f := range rt.Fields() {
				if Doc(rt.Name(), f.Name) == "" {
					t.Errorf("field %s.%s has no doc comment", rt.Name(), f.Name)
				}
				visit(f.Type)
			}
		}
	}
	for _, h := range Hooks {
		if h.Doc == "" {
			t.Errorf("hook %s %s has no Doc", h.Kind, h.Name)
		}
		visit(h.Request)
		visit(h.Response)
	}
	if len(seen) < 10 {
		t.Fatalf("visited %d types; the walk is broken", len(seen))
	}
}

func TestObjectKeepsEveryField(t *testing.T) {
	in := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"app":"x"},` +
		`"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"u","controller":true}]},` +
		`"data":{"k":"v"},"immutable":true}`
	var o Object
	if err := json.Unmarshal([]byte(in), &o); err != nil {
		t.Fatal(err)
	}
	if o.Kind != "ConfigMap" || o.Metadata.Labels["app"] != "x" || o.Fields["immutable"] != true || len(o.Fields) != 2 {
		t.Fatalf("decoded %+v", o)
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(in), &a)
	_ = json.Unmarshal(out, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the object:\n in  %s\n out %s", in, out)
	}
}

func TestConformsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  map[string]any
		want string
	}{
		{"unknown top-level field", map[string]any{"childs": []any{}}, "unknown field"},
		{"wrong type", map[string]any{"finalized": "yes"}, "cannot unmarshal"},
		{"unknown field of an event", map[string]any{"events": []any{map[string]any{"reason": "A", "message": "m", "note": "x"}}}, "unknown field"},
		{"metadata field ObjectMeta lacks", map[string]any{"children": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "color": "red"}}}}, "does not hold all of it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Conforms(tc.msg, &CompositeResponse{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Conforms = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	ok := map[string]any{"status": map[string]any{"n": 1}, "children": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v"}}}, "resyncAfterSeconds": 1.5}
	if err := Conforms(ok, &CompositeResponse{}); err != nil {
		t.Errorf("Conforms refused a valid response: %v", err)
	}
}
