package website

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/scripting"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

// TestHooksAgree runs both controllers' hooks offline through a life cycle of the sample —
// created, converged, edited, deleted step by step — feeding each step the children the
// previous step asked for, and compares every response with the same golden file: the two
// languages must give byte-identical answers.
func TestHooksAgree(t *testing.T) {
	clock := func() time.Time { return time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC) }
	rt := engine.NewRuntime(scripting.Options{Now: clock})
	for _, l := range languages {
		t.Run(l.name, func(t *testing.T) {
			exampletest.RequireSupport(t, rt, l.lang, stdlibModules...)
			prog := compileShared(t, rt, l.lang, l.file)
			call := func(step, function string, req map[string]any) map[string]any {
				t.Helper()
				out, err := prog.Call(context.Background(), scripting.Invocation{Function: function, Request: req, Now: clock})
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				resp := jsonShape(t, out)
				golden(t, l.lang, step, resp)
				return resp
			}

			site := sample(t)
			created := call("1-sync-nothing-observed", "sync", request(site, nil, false))

			site["status"] = created["status"]
			converged := call("2-sync-all-observed", "sync", request(site, created["children"], false))

			edited := jsonShape(t, site)
			edited["status"] = converged["status"]
			spec := edited["spec"].(map[string]any)
			delete(spec, "basicAuth")
			spec["domain"] = "www.example.org"
			edited["metadata"].(map[string]any)["generation"] = int64(2)
			call("3-sync-after-edit", "sync", request(edited, converged["children"], false))

			site["metadata"].(map[string]any)["deletionTimestamp"] = "2025-05-01T12:00:00Z"
			first := call("4-finalize-all-observed", "finalize", request(site, converged["children"], true))
			second := call("5-finalize-service-gone", "finalize", request(site, first["children"], true))
			call("6-finalize-nothing-left", "finalize", request(site, second["children"], true))
		})
	}
}

// compileShared compiles the controller's shared script.
func compileShared(t *testing.T, rt *scripting.Runtime, lang scripting.Language, file string) scripting.Program {
	t.Helper()
	cc := readObject(t, file)
	src, _, _ := unstructured.NestedString(cc, "spec", "script", string(lang), "source")
	if src == "" {
		t.Fatalf("%s has no spec.script.%s.source", file, lang)
	}
	prog, err := rt.Compile(lang, file, src)
	if err != nil {
		t.Fatalf("compiling %s: %v", file, err)
	}
	return prog
}

// sample is sample.yaml as the API server would hand it to the engine.
func sample(t *testing.T) map[string]any {
	t.Helper()
	site := readObject(t, "sample.yaml")
	md := site["metadata"].(map[string]any)
	md["namespace"], md["uid"], md["generation"] = "default", "5a3e0c1e-0000-4000-8000-000000000001", int64(1)
	return site
}

// request is the hook request for site with desired (a response's children list) observed.
func request(site map[string]any, desired any, finalizing bool) map[string]any {
	children := map[string]any{"ConfigMap.v1": map[string]any{}, "Service.v1": map[string]any{}, "Secret.v1": map[string]any{}}
	list, _ := desired.([]any)
	for _, c := range list {
		obj := c.(map[string]any)
		group := children[obj["kind"].(string)+"."+obj["apiVersion"].(string)].(map[string]any)
		md := obj["metadata"].(map[string]any)
		if obj["kind"] == "Service" {
			// The API server allocates a cluster IP.
			obj["spec"].(map[string]any)["clusterIP"] = "10.0.0.42"
		}
		group[md["name"].(string)] = obj
	}
	return map[string]any{
		"controller": map[string]any{"metadata": map[string]any{"name": "website"}},
		"parent":     site,
		"children":   children,
		"related":    map[string]any{},
		"finalizing": finalizing,
	}
}

// golden compares resp with testdata/hooks/<step>.json, rewriting it from Starlark on -update.
func golden(t *testing.T, lang scripting.Language, step string, resp map[string]any) {
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
	if *update && lang == scripting.Starlark {
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
	if string(got) != string(want) {
		t.Errorf("%s: %s response differs from %s:\n--- got\n%s\n--- want\n%s", step, lang, path, got, want)
	}
}

// jsonShape deep-copies v through JSON the way the API machinery decodes objects: integers
// as int64, other numbers as float64.
func jsonShape(t *testing.T, v any) map[string]any {
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

// readObject reads the first document of a YAML file in the JSON shape with int64
// integers, as objects from the API server are.
func readObject(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return decodeJSON(t, j)
}
