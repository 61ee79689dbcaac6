package manifest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"metascript.dev/metascript/apis/v1alpha1"
)

const stream = `# leading comment
---
apiVersion: metascript.dev/v1alpha1
kind: CompositeController
metadata: {name: first}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  hooks: {sync: {starlark: {source: "def sync(r):\n    return {}\n"}}}
---

# the second document starts below
apiVersion: v1
kind: List
items:
  - apiVersion: metascript.dev/v1alpha1
    kind: CompositeController
    metadata: {name: second}
    spec: {parentResource: {apiVersion: v1, resource: secrets}}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: src}
    data: {sync.star: "def sync(r):\n    return {}\n"}
--- # a separator with a comment
apiVersion: metascript.dev/v1alpha1
kind: CompositeController
metadata: {name: typo}
spec:
  parentResource: {apiVersion: v1, resource: secrets}
  hooks: {sync: {starlark: {functoin: x}}}
---
apiVersion: metascript.dev/v1alpha1
kind: CompositeController
spec: {parentResource: {apiVersion: v1, resource: secrets}}
---
- just
- a list
---
key: [unclosed
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ignored}
`

func TestParse(t *testing.T) {
	f := Parse("s.yaml", []byte(stream))
	var got []string
	for _, c := range f.Controllers {
		got = append(got, c.Ref()+"@"+strconv.Itoa(c.Line))
	}
	if want := "compositecontroller/first@3 compositecontroller/second@12"; strings.Join(got, " ") != want {
		t.Errorf("controllers %q, want %q", strings.Join(got, " "), want)
	}
	wantErrs := []string{
		"s.yaml:24: compositecontroller/typo: unknown field spec.hooks.sync.starlark.functoin",
		"s.yaml:31: metadata.name is required",
		"s.yaml:35: expected a resource object, got a list",
		"s.yaml:38: ",
	}
	if len(f.Errors) != len(wantErrs) {
		t.Fatalf("errors %v, want %d", f.Errors, len(wantErrs))
	}
	for i, e := range f.Errors {
		if !strings.HasPrefix(e.Error(), wantErrs[i]) {
			t.Errorf("error %d: %q, want prefix %q", i, e.Error(), wantErrs[i])
		}
	}
	if f.Controllers[0].Object["kind"] != "CompositeController" {
		t.Errorf("Object is not the resource as written: %v", f.Controllers[0].Object)
	}
	if src, err := f.ConfigMaps.ConfigMapKey(context.Background(), v1alpha1.ConfigMapKeyRef{Namespace: "any", Name: "src", Key: "sync.star"}); err != nil || !strings.HasPrefix(src, "def sync") {
		t.Errorf("ConfigMap from a List: %q, %v", src, err)
	}
}

func TestConfigMapKey(t *testing.T) {
	m := ConfigMaps{}
	for _, cm := range []map[string]any{
		{"metadata": map[string]any{"name": "a", "namespace": "ns1"}, "data": map[string]any{"k": "in ns1"}},
		{"metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "unnamespaced"}},
		{"metadata": map[string]any{"name": "b", "namespace": "ns1"}, "data": map[string]any{"k": "b"}},
	} {
		if err := m.add(cm); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		ns, name, key string
		want, wantErr string
	}{
		{"ns1", "a", "k", "in ns1", ""},
		{"ns2", "a", "k", "unnamespaced", ""},
		{"ns2", "b", "k", "", "ConfigMap ns2/b is not in the given files"},
		{"ns1", "b", "other", "", `ConfigMap ns1/b has no key "other"`},
	}
	for _, tt := range tests {
		got, err := m.ConfigMapKey(context.Background(), v1alpha1.ConfigMapKeyRef{Namespace: tt.ns, Name: tt.name, Key: tt.key})
		if got != tt.want || (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s/%s[%s] = %q, %v; want %q, %q", tt.ns, tt.name, tt.key, got, err, tt.want, tt.wantErr)
		}
	}
	if err := m.add(map[string]any{"metadata": map[string]any{"name": "c"}, "data": map[string]any{"n": int64(1)}}); err == nil {
		t.Error("a non-string data value was accepted")
	}
}

func TestFind(t *testing.T) {
	one := NewSet(Parse("a.yaml", []byte("apiVersion: metascript.dev/v1alpha1\nkind: CompositeController\nmetadata: {name: only}\nspec: {parentResource: {apiVersion: v1, resource: pods}}\n")))
	two := NewSet(Parse("s.yaml", []byte(stream)))
	tests := []struct {
		set        *Set
		name, want string
		wantErr    string
	}{
		{one, "", "only", ""},
		{one, "only", "only", ""},
		{one, "other", "", `no CompositeController named "other" (found: only)`},
		{two, "", "", "several controllers (first, second): name one"},
		{two, "second", "second", ""},
		{NewSet(), "", "", "no CompositeController found"},
	}
	for _, tt := range tests {
		c, err := tt.set.Find(tt.name)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Find(%q) error %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil || c.Name != tt.want:
			t.Errorf("Find(%q) = %v, %v; want %s", tt.name, c, err, tt.want)
		}
	}
}

func TestHook(t *testing.T) {
	const head = "apiVersion: metascript.dev/v1alpha1\nkind: CompositeController\nmetadata: {name: x}\nspec:\n  parentResource: {apiVersion: v1, resource: pods}\n"
	none := controller(t, head)
	if _, err := none.Hook("sync"); err == nil || err.Error() != "compositecontroller/x defines no hooks" {
		t.Errorf("no hooks: %v", err)
	}
	two := controller(t, head+"  hooks: {customize: {starlark: {function: c}}, sync: {starlark: {function: s}}}\n")
	if h, err := two.Hook("customize"); err != nil || h.Starlark.Function != "c" {
		t.Errorf("customize: %v, %v", h, err)
	}
	if _, err := two.Hook("finalize"); err == nil || err.Error() != "compositecontroller/x has no hooks.finalize (defined: sync, customize)" {
		t.Errorf("finalize: %v", err)
	}
}

// controller parses doc, which must hold exactly one controller and nothing wrong.
func controller(t *testing.T, doc string) *Controller {
	t.Helper()
	f := Parse("c.yaml", []byte(doc))
	if len(f.Errors) > 0 || len(f.Controllers) != 1 {
		t.Fatalf("Parse: %d controllers, errors %v", len(f.Controllers), f.Errors)
	}
	return f.Controllers[0]
}
