package stdlib_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
)

// compilers holds the language adapters; each registers itself from its own
// fixtures_<language>_test.go. A language of fixtureLanguages without one fails the tests
// that need it: fixtures that exist are always run.
var compilers = map[scripting.Language]scripting.Compiler{}

// fixtureLanguages lists every language the fixtures exist in, with their file extension.
var fixtureLanguages = []struct {
	lang scripting.Language
	ext  string
}{
	{scripting.Starlark, ".star"},
	{scripting.JavaScript, ".js"},
}

var fixtureNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// expectation is a fixture's expected JSON file: the hook's result and log lines, or a
// substring of its runtime error. It is the same for every language.
type expectation struct {
	Result any              `json:"result"`
	Log    []map[string]any `json:"log"`
	Error  string           `json:"error"`
}

// TestFixtures runs every testdata/<name>.<ext> hook through scripting.NewRuntime with each
// language's compiler and compares what it returns, logs or fails with to
// testdata/<name>.json. Numbers compare by value (Starlark 5400.0 equals JavaScript 5400):
// the JSON shape has one number type per value, not per language.
func TestFixtures(t *testing.T) {
	names := fixtureNames(t)
	var request map[string]any
	readJSON(t, "testdata/request.json", &request)
	for _, fl := range fixtureLanguages {
		t.Run(string(fl.lang), func(t *testing.T) {
			c := requireCompiler(t, fl.lang)
			rt := scripting.NewRuntime(scripting.Options{Now: func() time.Time { return fixtureNow }}, c)
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					var want expectation
					readJSON(t, filepath.Join("testdata", name+".json"), &want)
					// Twice: a second call must see fresh state (a fresh log limiter, too).
					for range 2 {
						runFixture(t, rt, fl.lang, filepath.Join("testdata", name+fl.ext), request, want)
					}
				})
			}
		})
	}
}

// requireCompiler returns the adapter of lang, failing the test when none registered: its
// fixtures exist, so they must run.
func requireCompiler(t *testing.T, lang scripting.Language) scripting.Compiler {
	t.Helper()
	c, ok := compilers[lang]
	if !ok {
		t.Fatalf("no %s adapter registered (fixtures_%s_test.go); its fixtures would not run", lang, lang)
	}
	return c
}

func runFixture(t *testing.T, rt *scripting.Runtime, lang scripting.Language, file string, request map[string]any, want expectation) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := rt.Compile(lang, file, string(src))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	before := deepCopyJSON(t, request)
	got, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync", Request: request, Log: logger})
	if !reflect.DeepEqual(request, before) {
		t.Errorf("the hook's stdlib calls changed the request")
	}
	if want.Error != "" {
		var rerr *scripting.RuntimeError
		if !errors.As(err, &rerr) {
			t.Fatalf("got %v (%T), want a *scripting.RuntimeError containing %q", err, err, want.Error)
		}
		if !strings.Contains(rerr.Msg, want.Error) {
			t.Fatalf("error message %q does not contain %q", rerr.Msg, want.Error)
		}
		if len(rerr.Stack) == 0 || !strings.HasSuffix(rerr.Stack[len(rerr.Stack)-1].File, file) {
			t.Errorf("error is not located in %s: %v", file, rerr.Stack)
		}
		return
	}
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if diff := jsonDiff("result", normalize(got), normalize(want.Result)); diff != "" {
		gotJSON, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("%s\ngot:\n%s", diff, gotJSON)
	}
	lines := logLines(t, &logBuf)
	if len(lines) != len(want.Log) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(want.Log), logBuf.String())
	}
	for i, w := range want.Log {
		for k, v := range w {
			if diff := jsonDiff(fmt.Sprintf("log[%d].%s", i, k), normalize(lines[i][k]), normalize(v)); diff != "" {
				t.Errorf("%s", diff)
			}
		}
	}
}

// TestFixturesInParallel runs all fixtures of every language from many goroutines at
// once on one Runtime (run it with -race): stdlib state shared between calls, such as the
// regexp cache, must be safe.
func TestFixturesInParallel(t *testing.T) {
	for _, fl := range fixtureLanguages {
		requireCompiler(t, fl.lang)
	}
	names := fixtureNames(t)
	var request map[string]any
	readJSON(t, "testdata/request.json", &request)
	var cs []scripting.Compiler
	for _, c := range compilers {
		cs = append(cs, c)
	}
	rt := scripting.NewRuntime(scripting.Options{Now: func() time.Time { return fixtureNow }}, cs...)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, fl := range fixtureLanguages {
				for j, name := range names {
					if (g+i+j)%2 == 0 {
						continue
					}
					var want expectation
					readJSON(t, filepath.Join("testdata", name+".json"), &want)
					runFixture(t, rt, fl.lang, filepath.Join("testdata", name+fl.ext), request, want)
				}
			}
		}()
	}
	wg.Wait()
}

// TestEveryModuleHasFixtures: each stdlib module is exercised from both languages.
func TestEveryModuleHasFixtures(t *testing.T) {
	for _, m := range modules() {
		for _, fl := range fixtureLanguages {
			file := filepath.Join("testdata", m+fl.ext)
			if _, err := os.Stat(file); err != nil {
				t.Errorf("module %s has no %s fixture: %v", m, fl.lang, err)
			}
		}
	}
}

func fixtureNames(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if name == "request" {
			continue
		}
		for _, fl := range fixtureLanguages {
			if _, err := os.Stat(filepath.Join("testdata", name+fl.ext)); err != nil {
				t.Errorf("fixture %s has no %s version: %v", name, fl.lang, err)
			}
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		t.Fatal("no fixtures found")
	}
	return names
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if m, ok := v.(*map[string]any); ok {
		*m = normalize(*m).(map[string]any)
	}
}

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// normalize returns v with every number as float64, for comparison by value.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = normalize(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = normalize(x)
		}
		return l
	case json.Number:
		f, _ := v.Float64()
		return f
	case int64:
		return float64(v)
	case int:
		return float64(v)
	}
	return v
}

func deepCopyJSON(t *testing.T, v map[string]any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	readJSONBytes(t, data, &out)
	return out
}

func readJSONBytes(t *testing.T, data []byte, v *map[string]any) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
	*v = normalize(*v).(map[string]any)
}

// jsonDiff describes the first difference between normalized values, by path.
func jsonDiff(path string, got, want any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %#v, want a dict", path, got)
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
			if d := jsonDiff(path+"."+k, g[k], w[k]); d != "" {
				return d
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s.%s: unexpected", path, k)
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %#v, want %#v", path, got, want)
		}
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	case float64:
		if g, ok := got.(float64); ok && (g == w || math.Abs(g-w) <= 1e-9*math.Abs(w)) {
			return ""
		}
	default:
		if got == want {
			return ""
		}
	}
	return fmt.Sprintf("%s: got %#v, want %#v", path, got, want)
}
