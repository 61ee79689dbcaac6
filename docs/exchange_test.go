package docs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/scripting"
)

// TestExchanges calls hooks with the requests the docs show and compares their answers with
// the responses shown. A block marked `request` (```yaml request) is sent to the primary
// hook (sync, map) of the nearest whole controller above it on the page, or to the hook a
// `hook=NAME` word names; the next block marked `response` must be its answer, as JSON.
func TestExchanges(t *testing.T) {
	rt := engine.NewRuntime(scripting.Options{})
	exchanges := 0
	for _, page := range pages(t) {
		var controller map[string]any
		var request *block
		for _, b := range blocks(page, read(t, page)) {
			switch {
			case b.marked("request"):
				request = &b
			case b.marked("response"):
				if request == nil || controller == nil {
					t.Errorf("%s: a response with no request and controller above it", b.where())
					continue
				}
				exchange(t, rt, controller, *request, b)
				exchanges++
				request = nil
			case b.lang == "yaml" && !b.marked(fragment):
				var obj map[string]any
				if yaml.Unmarshal([]byte(b.text), &obj) == nil && obj["apiVersion"] == "metascript.dev/v1alpha1" {
					controller = obj
				}
			}
		}
	}
	if exchanges == 0 {
		t.Error("no request and response pair found: docs/concepts.md shows one")
	}
}

// exchange calls the hook of controller that req names and compares its answer with resp.
func exchange(t *testing.T, rt *scripting.Runtime, controller map[string]any, req, resp block) {
	t.Helper()
	kind := kinds.Lookup(str(controller, "kind"))
	if kind == nil {
		t.Errorf("%s: the controller above is of no known kind", req.where())
		return
	}
	hook := ""
	for _, h := range kind.Hooks {
		if h.Primary {
			hook = h.Name
		}
	}
	for _, w := range req.words {
		if name, ok := strings.CutPrefix(w, "hook="); ok {
			hook = name
		}
	}
	lang, source, function, err := hookSource(controller, hook)
	if err != nil {
		t.Errorf("%s: %v", req.where(), err)
		return
	}
	prog, err := rt.Compile(lang, req.where(), source)
	if err != nil {
		t.Errorf("%s: %v", req.where(), err)
		return
	}
	var request map[string]any
	if err := yaml.Unmarshal([]byte(req.text), &request); err != nil {
		t.Errorf("%s: %v", req.where(), err)
		return
	}
	got, err := prog.Call(context.Background(), scripting.Invocation{Function: function, Request: request})
	if err != nil {
		t.Errorf("%s: the %s hook failed: %v", req.where(), hook, err)
		return
	}
	var want any
	if err := json.Unmarshal([]byte(resp.text), &want); err != nil {
		t.Errorf("%s: not JSON: %v", resp.where(), err)
		return
	}
	if g, w := canonical(got), canonical(want); g != w {
		t.Errorf("%s: the %s hook answers\n%s\nthe page shows\n%s", resp.where(), hook, g, w)
	}
}

// hookSource finds the code of an inline hook: its own source, or the shared script.
func hookSource(controller map[string]any, hook string) (scripting.Language, string, string, error) {
	spec, _ := controller["spec"].(map[string]any)
	hooks, _ := spec["hooks"].(map[string]any)
	def, _ := hooks[hook].(map[string]any)
	for _, lang := range []scripting.Language{scripting.Starlark, scripting.JavaScript} {
		inline, ok := def[string(lang)].(map[string]any)
		if !ok {
			continue
		}
		function := str(inline, "function")
		if function == "" {
			function = hook
		}
		if src := str(inline, "source"); src != "" {
			return lang, src, function, nil
		}
		script, _ := spec["script"].(map[string]any)
		shared, _ := script[string(lang)].(map[string]any)
		return lang, str(shared, "source"), function, nil
	}
	return "", "", "", errUninlined(hook)
}

type errUninlined string

func (e errUninlined) Error() string {
	return "the " + string(e) + " hook is not inline Starlark or JavaScript"
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// canonical is v as indented JSON with sorted keys, numbers as JSON has them.
func canonical(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var norm any
	_ = json.Unmarshal(data, &norm)
	out, _ := json.MarshalIndent(norm, "", "  ")
	return string(out)
}
