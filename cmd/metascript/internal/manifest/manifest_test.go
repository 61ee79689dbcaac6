package manifest

import (
	"context"
	"fmt"
	"reflect"
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

// TestControllerKinds: every kind of controller resource is described alike, and decoded as
// strictly.
func TestControllerKinds(t *testing.T) {
	const (
		group     = "apiVersion: metascript.dev/v1alpha1\n"
		composite = group + "kind: CompositeController\nmetadata: {name: c}\nspec:\n  parentResource: {apiVersion: v1, resource: pods}\n"
		decorator = group + "kind: DecoratorController\nmetadata: {name: d}\nspec:\n  resources: [{apiVersion: v1, resource: pods}]\n"
		hooks     = "  hooks: {customize: {starlark: {}}, sync: {starlark: {}}, finalize: {javascript: {source: x}}}\n"
		script    = "  script: {starlark: {source: \"def sync(r):\\n    return {}\\n\"}}\n"
	)
	tests := []struct {
		name, doc string
		// want is "KIND REF HOOKS SCRIPT", SCRIPT telling whether spec.script was read.
		want    string
		wantErr string
	}{
		{name: "composite", doc: composite + hooks + script,
			want: "CompositeController compositecontroller/c sync,finalize,customize script"},
		{name: "decorator", doc: decorator + hooks + script,
			want: "DecoratorController decoratorcontroller/d sync,finalize,customize script"},
		{name: "decorator without hooks or script", doc: decorator,
			want: "DecoratorController decoratorcontroller/d  -"},
		{name: "composite, unknown field", doc: composite + "  hooks: {sync: {starlark: {functoin: x}}}\n",
			wantErr: "c.yaml:1: compositecontroller/c: unknown field spec.hooks.sync.starlark.functoin"},
		{name: "decorator, unknown field", doc: decorator + "  attachments: [{apiVersion: v1, resource: secrets, updateStrategy: {methd: InPlace}}]\n",
			wantErr: "c.yaml:1: decoratorcontroller/d: unknown field spec.attachments[0].updateStrategy.methd"},
		{name: "decorator, composite field", doc: decorator + "  parentResource: {apiVersion: v1, resource: pods}\n",
			wantErr: "c.yaml:1: decoratorcontroller/d: unknown field spec.parentResource"},
		{name: "decorator without name", doc: group + "kind: DecoratorController\nspec: {resources: []}\n",
			wantErr: "c.yaml:1: metadata.name is required"},
		{name: "another group", doc: "apiVersion: example.com/v1\nkind: DecoratorController\nmetadata: {name: x}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse("c.yaml", []byte(tt.doc))
			var got, gotErr []string
			for _, c := range f.Controllers {
				var names []string
				for _, h := range c.Hooks() {
					names = append(names, h.Name)
				}
				sc := "-"
				if c.Script != nil && c.Script.Starlark != nil {
					sc = "script"
				}
				got = append(got, strings.Join([]string{c.Kind, c.Ref(), strings.Join(names, ","), sc}, " "))
				if got := reflect.TypeOf(c.Typed).String(); got != "*v1alpha1."+c.Kind {
					t.Errorf("%s: the typed resource is a %s; want a *v1alpha1.%s", c.Ref(), got, c.Kind)
				}
			}
			for _, e := range f.Errors {
				gotErr = append(gotErr, e.Error())
			}
			if strings.Join(got, "; ") != tt.want || strings.Join(gotErr, "; ") != tt.wantErr {
				t.Errorf("controllers %q, errors %q; want %q, %q", got, gotErr, tt.want, tt.wantErr)
			}
		})
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
	const (
		composite = "apiVersion: metascript.dev/v1alpha1\nkind: CompositeController\nmetadata: {name: only}\nspec: {parentResource: {apiVersion: v1, resource: pods}}\n"
		decorator = "apiVersion: metascript.dev/v1alpha1\nkind: DecoratorController\nmetadata: {name: %s}\nspec: {resources: [{apiVersion: v1, resource: pods}]}\n"
	)
	one := NewSet(Parse("a.yaml", []byte(composite)))
	two := NewSet(Parse("s.yaml", []byte(stream)))
	deco := NewSet(Parse("d.yaml", []byte(fmt.Sprintf(decorator, "deco"))))
	// A CompositeController and a DecoratorController may share a name.
	shared := NewSet(Parse("a.yaml", []byte(composite)), Parse("d.yaml", []byte(fmt.Sprintf(decorator, "only"))),
		Parse("e.yaml", []byte(fmt.Sprintf(decorator, "other"))))
	tests := []struct {
		set        *Set
		name, want string
		wantErr    string
	}{
		{one, "", "compositecontroller/only", ""},
		{one, "only", "compositecontroller/only", ""},
		{one, "compositecontroller/only", "compositecontroller/only", ""},
		{one, "other", "", `no controller named "other" (found: only)`},
		{one, "decoratorcontroller/only", "", `no controller named "decoratorcontroller/only" (found: only)`},
		{two, "", "", "several controllers (first, second): name one"},
		{two, "second", "compositecontroller/second", ""},
		{deco, "", "decoratorcontroller/deco", ""},
		{deco, "deco", "decoratorcontroller/deco", ""},
		{shared, "other", "decoratorcontroller/other", ""},
		{shared, "only", "", `several controllers named "only" (compositecontroller/only, decoratorcontroller/only): name one as KIND/NAME`},
		{shared, "decoratorcontroller/only", "decoratorcontroller/only", ""},
		{shared, "", "", "several controllers (compositecontroller/only, decoratorcontroller/only, other): name one"},
		{shared, "nope", "", `no controller named "nope" (found: compositecontroller/only, decoratorcontroller/only, other)`},
		{NewSet(), "", "", "no controller resource (CompositeController, DecoratorController, MapController, NamespacedCompositeController, NamespacedDecoratorController, NamespacedMapController) found"},
	}
	for _, tt := range tests {
		c, err := tt.set.Find(tt.name)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Find(%q) error %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil || c.Ref() != tt.want:
			t.Errorf("Find(%q) = %v, %v; want %s", tt.name, c, err, tt.want)
		}
	}
}

func TestHook(t *testing.T) {
	const (
		composite = "apiVersion: metascript.dev/v1alpha1\nkind: CompositeController\nmetadata: {name: x}\nspec:\n  parentResource: {apiVersion: v1, resource: pods}\n"
		decorator = "apiVersion: metascript.dev/v1alpha1\nkind: DecoratorController\nmetadata: {name: x}\nspec:\n  resources: [{apiVersion: v1, resource: pods}]\n"
		two       = "  hooks: {customize: {starlark: {function: c}}, sync: {starlark: {function: s}}}\n"
	)
	tests := []struct {
		doc, hook string
		// want is the hook's starlark.function, or the error.
		want string
	}{
		{composite, "sync", "compositecontroller/x defines no hooks"},
		{composite + two, "customize", "c"},
		{composite + two, "finalize", "compositecontroller/x has no hooks.finalize (defined: sync, customize)"},
		{decorator, "sync", "decoratorcontroller/x defines no hooks"},
		{decorator + two, "sync", "s"},
		{decorator + two, "finalize", "decoratorcontroller/x has no hooks.finalize (defined: sync, customize)"},
	}
	for _, tt := range tests {
		h, err := controller(t, tt.doc).Hook(tt.hook)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = h.Def.Starlark.Function
		}
		if got != tt.want {
			t.Errorf("%s: Hook(%q) = %q, want %q", controller(t, tt.doc).Ref(), tt.hook, got, tt.want)
		}
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

func TestSecretKey(t *testing.T) {
	f := Parse("secrets.yaml", []byte(`apiVersion: v1
kind: Secret
metadata: {name: token, namespace: ops}
data: {token: c3RhbGU=, ca.crt: Q0E=}
stringData: {token: fresh}
---
apiVersion: v1
kind: Secret
metadata: {name: anywhere}
stringData: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: broken}
data: {k: "not base64!"}
`))
	if len(f.Errors) != 1 || !strings.Contains(f.Errors[0].Error(), "secret/broken: data.k") {
		t.Fatalf("errors %v, want one about secret/broken's data.k", f.Errors)
	}
	for _, tt := range []struct {
		ns, name, key string
		want, wantErr string
	}{
		{"ops", "token", "token", "fresh", ""},
		{"ops", "token", "ca.crt", "CA", ""},
		{"elsewhere", "anywhere", "k", "v", ""},
		{"other", "token", "token", "", "Secret other/token is not in the given files"},
		{"ops", "token", "nope", "", `Secret ops/token has no key "nope"`},
	} {
		got, err := NewSet(f).Secrets.SecretKey(context.Background(), v1alpha1.SecretKeyRef{Namespace: tt.ns, Name: tt.name, Key: tt.key})
		if string(got) != tt.want || (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s/%s[%s] = %q, %v; want %q, %q", tt.ns, tt.name, tt.key, got, err, tt.want, tt.wantErr)
		}
	}
}
