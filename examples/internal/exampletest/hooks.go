package exampletest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/enginetest"
)

// clock is the only time offline hooks see, so that golden files do not change.
func clock() time.Time { return time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC) }

// Hooks calls one language's shared script offline and checks every response against the
// golden file of its step, testdata/hooks/<step>.json. With Update, the Starlark responses
// rewrite the golden files instead: the JavaScript ones must then match them byte for byte.
type Hooks struct {
	t      *testing.T
	lang   scripting.Language
	prog   scripting.Program
	update bool
}

// NewHooks compiles spec.script of the DecoratorController in file for lang; it fails the
// test when the runtime lacks the language or one of the stdlib modules named.
func NewHooks(t *testing.T, l Language, update bool, modules ...string) *Hooks {
	t.Helper()
	return NewHooksOf(t, "DecoratorController", l, update, modules...)
}

// NewHooksOf is NewHooks for the controller of kind in the file.
func NewHooksOf(t *testing.T, kind string, l Language, update bool, modules ...string) *Hooks {
	t.Helper()
	rt := engine.NewRuntime(scripting.Options{Now: clock})
	RequireSupport(t, rt, l.Lang, modules...)
	ctl := FromFile(t, l.File, kind)
	src, _, _ := unstructured.NestedString(ctl, "spec", "script", string(l.Lang), "source")
	if src == "" {
		t.Fatalf("%s has no spec.script.%s.source", l.File, l.Lang)
	}
	prog, err := rt.Compile(l.Lang, l.File, src)
	if err != nil {
		t.Fatalf("compiling %s: %v", l.File, err)
	}
	return &Hooks{t: t, lang: l.Lang, prog: prog, update: update}
}

// Call calls function with req, compares the response with the golden file of step, and
// returns it in the JSON shape the engine reads.
func (h *Hooks) Call(step, function string, req map[string]any) map[string]any {
	h.t.Helper()
	out, err := h.prog.Call(context.Background(), scripting.Invocation{Function: function, Request: req, Now: clock})
	if err != nil {
		h.t.Fatalf("%s: %v", step, err)
	}
	resp := JSONShape(h.t, out)
	h.golden(step, resp)
	return resp
}

func (h *Hooks) golden(step string, resp map[string]any) {
	t := h.t
	t.Helper()
	path := filepath.Join("testdata", "hooks", step+".json")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(resp); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	if h.update && h.lang == scripting.Starlark {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestHooksAgree -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %s response differs from %s:\n--- got\n%s\n--- want\n%s", step, h.lang, path, got, want)
	}
}

// JSONShape deep-copies v through JSON the way the API machinery decodes objects: integers
// as int64, other numbers as float64.
func JSONShape(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, data)
}

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return numbers(out).(map[string]any)
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// FromFile returns the first document of kind in a YAML file, in the JSON shape objects
// from the API server have (integers as int64).
func FromFile(t *testing.T, file, kind string) map[string]any {
	t.Helper()
	for _, obj := range enginetest.ObjectsFromFile(t, file) {
		if obj.GetKind() == kind {
			return JSONShape(t, obj.Object)
		}
	}
	t.Fatalf("%s has no %s", file, kind)
	return nil
}
