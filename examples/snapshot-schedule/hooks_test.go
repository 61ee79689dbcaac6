package snapshotschedule

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/scripting"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

const outputsKey = "Snapshot." + exampleAPI

// The sample schedule (interval 6h, TTL 240h) shortened to a TTL of 24h, its claim's map key,
// and the clock's start: 12:34:56, 2096s into the 6h slot starting at 1746100800.
var (
	t0    = time.Date(2025, 5, 1, 12, 34, 56, 0, time.UTC)
	ttl   = "24h"
	claim = "data-my-app-0"
	key   = "3f9a1c2e-0000-4000-8000-000000000002"
)

// Snapshot names: the claim, the start of the interval's slot, the map key's prefix.
const (
	s0 = "data-my-app-0-1746100800-3f9a1" // taken at t0
	s1 = "data-my-app-0-1746122400-3f9a1" // taken at t0+6h
	s2 = "data-my-app-0-1746187200-3f9a1" // taken at t0+25h
)

// TestHooksAgree runs both controllers' hooks offline, with the clock fixed at each step,
// through a claim's life: first snapshot, interval not due, due, an expiry together with a
// new snapshot, then, the claim deleted, the tombstone keeping its snapshots until each
// expires. Each step sees the snapshots the previous one asked for. It checks the snapshot
// decisions and the resync of every step, that a kept snapshot is asked for unchanged, and
// compares every response with one golden file: both languages must answer byte for byte
// alike.
func TestHooksAgree(t *testing.T) {
	h := time.Hour
	steps := []struct {
		name, hook string
		at         time.Duration
		want       []string
		resync     time.Duration // 0: none
	}{
		{"1-map-first-snapshot", "map", 0, []string{s0}, 6 * h},
		{"2-map-not-due", "map", h, []string{s0}, 5 * h},
		{"3-map-interval-due", "map", 6 * h, []string{s0, s1}, 6 * h},    // next: s1+6h
		{"4-map-expiry-and-due", "map", 25 * h, []string{s1, s2}, 5 * h}, // next: s1 expires at t0+30h
		{"5-tombstone-keeps", "tombstone", 26 * h, []string{s1, s2}, 4 * h},
		{"6-tombstone-one-expired", "tombstone", 30 * h, []string{s2}, 19 * h},
		{"7-tombstone-all-expired", "tombstone", 49 * h, nil, 0},
	}
	rt := engine.NewRuntime(scripting.Options{})
	for _, l := range languages {
		t.Run(l.name, func(t *testing.T) {
			exampletest.RequireSupport(t, rt, l.lang, "time")
			prog := compileShared(t, rt, l.lang, l.file)
			observed := map[string]any{}
			for _, st := range steps {
				now := t0.Add(st.at)
				req := map[string]any{
					"controller": map[string]any{"metadata": map[string]any{"name": "snapshot-schedule"}},
					"parent":     schedule(t),
					"mapKey":     key,
					"outputs":    map[string]any{outputsKey: observed},
				}
				if st.hook == "map" {
					req["input"] = readObjects(t, "sample.yaml")[1]
				}
				out, err := prog.Call(context.Background(), scripting.Invocation{Function: st.hook, Request: req,
					Now: func() time.Time { return now }})
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				resp := jsonShape(t, out)
				golden(t, l.lang, st.name, resp)
				next := map[string]any{}
				list, _ := resp["outputs"].([]any)
				for _, o := range list {
					obj := o.(map[string]any)
					name, _, _ := unstructured.NestedString(obj, "metadata", "name")
					if old, ok := observed[name]; ok && !reflect.DeepEqual(old, obj) {
						t.Errorf("%s: kept snapshot %s changed:\n%v\n→ %v", st.name, name, old, obj)
					}
					next[name] = obj
				}
				if got := slices.Sorted(maps.Keys(next)); !slices.Equal(got, st.want) {
					t.Errorf("%s: snapshots %v, want %v", st.name, got, st.want)
				}
				if got := resp["resyncAfterSeconds"]; !reflect.DeepEqual(got, wantSeconds(st.resync)) {
					t.Errorf("%s: resyncAfterSeconds = %v, want %v", st.name, got, wantSeconds(st.resync))
				}
				observed = next
			}
		})
	}
}

// wantSeconds is d as the hooks answer it: whole seconds, absent (nil) for none.
func wantSeconds(d time.Duration) any {
	if d == 0 {
		return nil
	}
	return int64(d / time.Second)
}

// schedule is the sample's SnapshotSchedule as the API server would hand it to the engine,
// with a TTL of a day, so that a short timeline shows expiry.
func schedule(t *testing.T) map[string]any {
	t.Helper()
	s := readObjects(t, "sample.yaml")[0]
	md := s["metadata"].(map[string]any)
	md["namespace"], md["uid"], md["generation"] = "default", "5a3e0c1e-0000-4000-8000-000000000001", int64(1)
	s["spec"].(map[string]any)["snapshotTTL"] = ttl
	return s
}

// compileShared compiles the controller's shared script.
func compileShared(t *testing.T, rt *scripting.Runtime, lang scripting.Language, file string) scripting.Program {
	t.Helper()
	mc := readObjects(t, file)[0]
	src, _, _ := unstructured.NestedString(mc, "spec", "script", string(lang), "source")
	if src == "" {
		t.Fatalf("%s has no spec.script.%s.source", file, lang)
	}
	prog, err := rt.Compile(lang, file, src)
	if err != nil {
		t.Fatalf("compiling %s: %v", file, err)
	}
	return prog
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
	if !bytes.Equal(got, want) {
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

// readObjects reads the documents of a YAML file in the JSON shape with int64 integers, as
// objects from the API server are.
func readObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, decodeJSON(t, j))
	}
	return out
}
