package docs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/scripting"
)

// The words of an info string that say a block is knowingly not whole: ```yaml fragment,
// ```starlark fragment. A fragment is shown, never compiled.
const fragment = "fragment"

// hookNames are the functions a whole hook block must define at least one of.
var hookNames = []string{"sync", "finalize", "customize", "map", "tombstone"}

// TestBlocksCompile compiles every controller and hook the docs show, through the engine's
// own checks (engine/admission, as metascript validate and the admission webhook do):
//
//   - ```yaml: each document that is a controller resource (apiVersion metascript.dev/v1alpha1
//     and one of the controller kinds) must be one the engine would run. A block that holds
//     hook code (a starlark, javascript or webhook key) but no whole controller must be
//     marked fragment.
//   - ```starlark and ```javascript: the whole block compiles and defines a hook function.
//   - ```python: refused; hooks are Starlark.
func TestBlocksCompile(t *testing.T) {
	rt := engine.NewRuntime(scripting.Options{})
	controllers, hooks := 0, 0
	for _, page := range pages(t) {
		for _, b := range blocks(page, read(t, page)) {
			if b.marked(fragment) {
				continue
			}
			switch b.lang {
			case "yaml":
				controllers += checkYAML(t, rt, b)
			case "starlark":
				checkHook(t, rt, b, scripting.Starlark)
				hooks++
			case "javascript", "js":
				checkHook(t, rt, b, scripting.JavaScript)
				hooks++
			case "python":
				t.Errorf("%s: hook code is Starlark: open the block with ```starlark", b.where())
			}
		}
	}
	// The scan itself must have found what the docs are known to hold.
	if controllers < 5 || hooks < 2 {
		t.Errorf("found %d controllers and %d hooks in the docs; the block scan is broken", controllers, hooks)
	}
}

// metacontrollerGroup is the API group of Metacontroller's resources: the docs show them
// as the starting point of a move, and such a resource runs here once its apiVersion is
// metascript.dev/v1alpha1, which is how it is checked.
const metacontrollerGroup = "metacontroller.k8s.io/v1alpha1"

// checkYAML checks the controller resources of a yaml block and returns how many it held.
func checkYAML(t reporter, rt *scripting.Runtime, b block) int {
	t.Helper()
	n := 0
	hookKeys := false
	for i, doc := range strings.Split("\n"+b.text, "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Errorf("%s: document %d is not YAML: %v (mark the block %s if it is a part)", b.where(), i+1, err, fragment)
			continue
		}
		obj, _ := v.(map[string]any)
		kind, _ := obj["kind"].(string)
		d := kinds.Lookup(kind)
		if obj["apiVersion"] == metacontrollerGroup && d != nil {
			obj["apiVersion"] = "metascript.dev/v1alpha1"
		}
		if obj["apiVersion"] != "metascript.dev/v1alpha1" || d == nil {
			hookKeys = hookKeys || holdsHookCode(v)
			continue
		}
		n++
		for _, p := range admission.Check(context.Background(), d, obj, admission.Options{Compiler: rt}) {
			t.Errorf("%s: %s: %v", b.where(), kind, p)
		}
	}
	if n == 0 && hookKeys {
		t.Errorf("%s: holds hook code but no whole controller resource: make it whole, or mark it ```yaml %s",
			b.where(), fragment)
	}
	return n
}

// holdsHookCode reports whether v has a starlark, javascript or webhook key at any depth.
func holdsHookCode(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "starlark" || k == "javascript" || k == "webhook" || holdsHookCode(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsHookCode(e) {
				return true
			}
		}
	}
	return false
}

// checkHook compiles a whole hook block and requires a hook function in it. Compile
// errors are placed at their line of the page.
func checkHook(t reporter, rt *scripting.Runtime, b block, lang scripting.Language) {
	t.Helper()
	prog, err := rt.Compile(lang, b.page, b.text)
	var ce *scripting.CompileError
	switch {
	case errors.As(err, &ce):
		t.Errorf("%s:%d:%d: %s (mark the block ```%s %s if it is a part of a hook)",
			b.page, b.line+ce.Line, ce.Column, ce.Msg, b.lang, fragment)
		return
	case err != nil:
		t.Errorf("%s: %v", b.where(), err)
		return
	}
	for _, f := range prog.Functions() {
		if slices.Contains(hookNames, f) {
			return
		}
	}
	t.Errorf("%s: defines none of the hook functions %v (functions: %v)", b.where(), hookNames, prog.Functions())
}

// TestBlockRules: the rules above catch what they should, on blocks written here.
func TestBlockRules(t *testing.T) {
	rt := engine.NewRuntime(scripting.Options{})
	for _, tc := range []struct {
		name, text string
		fails      bool
	}{
		{"whole controller", "```yaml\napiVersion: metascript.dev/v1alpha1\nkind: CompositeController\nmetadata: {name: a}\n" +
			"spec:\n  parentResource: {apiVersion: v1, resource: configmaps}\n  hooks:\n    sync:\n      starlark:\n" +
			"        source: |\n          def sync(request):\n              return {}\n```\n", false},
		{"compile error", "```yaml\napiVersion: metascript.dev/v1alpha1\nkind: CompositeController\nmetadata: {name: a}\n" +
			"spec:\n  parentResource: {apiVersion: v1, resource: configmaps}\n  hooks:\n    sync:\n      starlark:\n" +
			"        source: |\n          def sync(request):\n              ...\n```\n", true},
		{"unknown field", "```yaml\napiVersion: metascript.dev/v1alpha1\nkind: MapController\nmetadata: {name: a}\n" +
			"spec:\n  parentResources: []\n```\n", true},
		{"unmarked part of a controller", "```yaml\nhooks:\n  sync:\n    starlark: {function: sync}\n```\n", true},
		{"marked part of a controller", "```yaml fragment\nhooks:\n  sync:\n    starlark: {function: sync}\n```\n", false},
		{"an object that is no controller", "```yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n```\n", false},
		{"whole starlark hook", "```starlark\ndef sync(request):\n    return {}\n```\n", false},
		{"starlark fragment unmarked", "```starlark\nreturn {\"children\": []}\n```\n", true},
		{"starlark without a hook function", "```starlark\ndef helper(x):\n    return x\n```\n", true},
		{"javascript hook", "```javascript\nfunction map(request) { return {outputs: []}; }\n```\n", false},
		{"indented block in a list", "1. step\n\n   ```starlark\n   def customize(request):\n       return {}\n   ```\n", false},
		{"metacontroller resource with a bad hook", "```yaml\napiVersion: metacontroller.k8s.io/v1alpha1\nkind: DecoratorController\n" +
			"metadata: {name: a}\nspec:\n  resources: [{apiVersion: v1, resource: pods}]\n  hooks:\n    sync:\n      webhook: {}\n```\n", true},
		{"metacontroller resource", "```yaml\napiVersion: metacontroller.k8s.io/v1alpha1\nkind: DecoratorController\n" +
			"metadata: {name: a}\nspec:\n  resources: [{apiVersion: v1, resource: pods}]\n  hooks:\n    sync:\n      webhook: {url: http://a/sync}\n```\n", false},
		{"a list", "```yaml\n- {apiGroups: [\"\"], resources: [pods], verbs: [get]}\n```\n", false},
		{"python", "```python\ndef sync(request):\n    return {}\n```\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs := blocks("case.md", tc.text)
			if len(bs) != 1 {
				t.Fatalf("found %d blocks, want 1", len(bs))
			}
			rec := &recorder{}
			b := bs[0]
			switch {
			case b.marked(fragment):
			case b.lang == "yaml":
				checkYAML(rec, rt, b)
			case b.lang == "starlark":
				checkHook(rec, rt, b, scripting.Starlark)
			case b.lang == "javascript":
				checkHook(rec, rt, b, scripting.JavaScript)
			case b.lang == "python":
				rec.Errorf("python")
			}
			if rec.failed != tc.fails {
				t.Errorf("failed = %v, want %v; errors: %v", rec.failed, tc.fails, rec.msgs)
			}
		})
	}
}

// reporter is what the checks report to: a *testing.T, or a recorder.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder keeps what a check reported, for tests of the checks themselves.
type recorder struct {
	failed bool
	msgs   []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
