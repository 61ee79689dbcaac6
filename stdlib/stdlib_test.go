package stdlib

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// callCase is one call of a module function. err, when set, is a substring the error must
// contain; otherwise the call must succeed and return exactly want (Go types included).
type callCase struct {
	fn     string // "module.function"
	args   []any
	kwargs []Kwarg
	want   any
	err    string
}

var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func testEnv() *Env { return &Env{Now: func() time.Time { return testNow }} }

func lookup(t *testing.T, qualified string) Func {
	t.Helper()
	mod, name, _ := strings.Cut(qualified, ".")
	for _, m := range All() {
		if m.Name == mod {
			if f := m.Functions[name]; f != nil {
				return f
			}
		}
	}
	t.Fatalf("no function %s", qualified)
	return nil
}

func runCases(t *testing.T, env *Env, cases []callCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.fn, i), func(t *testing.T) {
			got, err := lookup(t, c.fn)(env, c.args, c.kwargs)
			if c.err != "" {
				if err == nil {
					t.Fatalf("%s%v: got %#v, want error containing %q", c.fn, c.args, got, c.err)
				}
				if !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%s%v: error %q does not contain %q", c.fn, c.args, err, c.err)
				}
				if !strings.HasPrefix(err.Error(), c.fn+": ") {
					t.Fatalf("%s: error %q does not start with the function name", c.fn, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s%v: unexpected error: %v", c.fn, c.args, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s%v:\n got %#v\nwant %#v", c.fn, c.args, got, c.want)
			}
		})
	}
}

// allCases gathers the tables of every module's test file.
func allCases() []callCase {
	var all []callCase
	for _, cs := range [][]callCase{jsonCases, yamlCases, base64Cases, hashCases, timeCases,
		stringsCases, reCases, k8sCases, logCases} {
		all = append(all, cs...)
	}
	return all
}

func TestModules(t *testing.T) { runCases(t, testEnv(), allCases()) }

// TestEveryFunctionHasCases keeps the tables complete: each function of each module needs at
// least one success and one error case.
func TestEveryFunctionHasCases(t *testing.T) {
	ok, bad := map[string]bool{}, map[string]bool{}
	for _, c := range allCases() {
		if c.err == "" {
			ok[c.fn] = true
		} else {
			bad[c.fn] = true
		}
	}
	for _, m := range All() {
		for name := range m.Functions {
			q := m.Name + "." + name
			if !ok[q] {
				t.Errorf("%s has no success case", q)
			}
			if !bad[q] {
				t.Errorf("%s has no error case", q)
			}
		}
	}
}

// TestModuleDocsListFunctions checks that each module's doc comment, the reference for hook
// authors, lists every function and constant the module has.
func TestModuleDocsListFunctions(t *testing.T) {
	docs := moduleDocs(t)
	for _, m := range All() {
		doc, found := docs[m.Name]
		if !found {
			t.Errorf("module %s: no documented var found", m.Name)
			continue
		}
		for name := range m.Functions {
			if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `\(`).MatchString(doc) {
				t.Errorf("module %s: doc comment does not list %s(...)", m.Name, name)
			}
		}
		for name := range m.Constants {
			if !strings.Contains(doc, name) {
				t.Errorf("module %s: doc comment does not mention constant %s", m.Name, name)
			}
		}
	}
}

// moduleDocs maps module names to the doc comments of the vars defining them.
func moduleDocs(t *testing.T) map[string]string {
	byVar := map[string]string{}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR || g.Doc == nil {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					byVar[n.Name] = g.Doc.Text()
				}
			}
		}
	}
	docs := map[string]string{}
	for varName, m := range moduleVars() {
		if doc, ok := byVar[varName]; ok {
			docs[m.Name] = doc
		}
	}
	return docs
}

func moduleVars() map[string]*Module {
	return map[string]*Module{"JSON": JSON, "YAML": YAML, "Base64": Base64, "Hash": Hash,
		"Time": Time, "Strings": Strings, "RE": RE, "K8s": K8s, "Log": Log}
}

func TestAllModulesRegistered(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if seen[m.Name] {
			t.Errorf("module %s registered twice", m.Name)
		}
		seen[m.Name] = true
	}
	for name, m := range moduleVars() {
		if !seen[m.Name] {
			t.Errorf("%s (module %s) is not in All()", name, m.Name)
		}
	}
	if len(seen) != len(moduleVars()) {
		t.Errorf("All() has %d modules, this test knows %d", len(seen), len(moduleVars()))
	}
}

func TestArgumentBinding(t *testing.T) {
	runCases(t, testEnv(), []callCase{
		{fn: "hash.short", args: []any{"x"}, kwargs: []Kwarg{{"length", int64(4)}}, want: shortHash("x", 4)},
		{fn: "hash.short", kwargs: []Kwarg{{"text", "x"}}, want: shortHash("x", 10)},
		{fn: "hash.short", args: []any{"x", nil}, want: shortHash("x", 10)},
		{fn: "hash.short", args: []any{"x", float64(4)}, want: shortHash("x", 4)},
		{fn: "hash.short", args: []any{"x", 4.5}, err: "argument 2 (length): expected int, got float"},
		{fn: "hash.short", args: []any{}, err: "hash.short: missing argument 1 (text)"},
		{fn: "hash.short", args: []any{"x", int64(1), int64(2)}, err: "got 3 arguments, want at most 2"},
		{fn: "hash.short", args: []any{"x"}, kwargs: []Kwarg{{"size", int64(1)}}, err: `unexpected keyword argument "size"`},
		{fn: "hash.short", args: []any{"x"}, kwargs: []Kwarg{{"text", "y"}}, err: `argument "text" given twice`},
		{fn: "k8s.match_selector", args: []any{int64(1), nil}, err: "k8s.match_selector: argument 1 (selector): expected dict or string, got int"},
		{fn: "json.encode", args: []any{struct{}{}}, err: "unsupported Go type struct {}"},
	})
}

func TestNilEnvUsesDefaults(t *testing.T) {
	got, err := Time.Functions["now"](nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, got.(string)); err != nil {
		t.Fatalf("now() with nil Env returned %q: %v", got, err)
	}
}

type budgetRefusal struct{ n int64 }

func (e *budgetRefusal) Error() string { return fmt.Sprintf("would allocate %d bytes", e.n) }

// TestReserveIsAskedBeforeBuilding: every amplifying function asks Env.Reserve for the size
// of its result (encoders: of each buffer as it grows) and passes a refusal through,
// wrapped, instead of building it.
func TestReserveIsAskedBeforeBuilding(t *testing.T) {
	var asked []int64
	env := &Env{Reserve: func(n int64) error {
		asked = append(asked, n)
		if n >= 1000 {
			return &budgetRefusal{n}
		}
		return nil
	}}
	kb := strings.Repeat("x", 1000)
	calls := []struct {
		fn   string
		args []any
	}{
		{"json.encode", []any{[]any{kb}}},
		{"json.indent", []any{[]any{kb}}},
		{"json.indent", []any{`["` + kb + `"]`}},
		{"yaml.encode", []any{kb}},
		{"base64.encode", []any{kb}},
		{"strings.join", []any{[]any{kb, kb}, ","}},
		{"strings.replace", []any{kb, "x", "yy"}},
		{"strings.repeat", []any{kb, int64(2)}},
		{"re.replace", []any{"x", kb, "yy"}},
		{"time.format", []any{"2024-01-01T00:00:00Z", kb}},
		{"json.decode", []any{"[" + strings.Repeat("0,", 100) + "0]"}},
		{"yaml.decode", []any{strings.Repeat("- 0\n", 100)}},
		{"strings.split", []any{kb, ""}},
		{"strings.fields", []any{strings.Repeat("x ", 500)}},
		{"re.find_all", []any{"x", kb}},
		{"re.split", []any{"", kb}},
	}
	for _, c := range calls {
		asked = nil
		_, err := lookup(t, c.fn)(env, c.args, nil)
		var refusal *budgetRefusal
		if !errors.As(err, &refusal) {
			t.Errorf("%s: got %v, want the Reserve refusal wrapped", c.fn, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.fn+": ") {
			t.Errorf("%s: error %q does not name the function", c.fn, err)
		}
		if len(asked) == 0 {
			t.Errorf("%s: Reserve never asked", c.fn)
		}
	}
	// Small results pass.
	if got, err := lookup(t, "strings.repeat")(env, []any{"ab", int64(2)}, nil); err != nil || got != "abab" {
		t.Errorf("small repeat: %v, %v", got, err)
	}
}

// TestParamsCoverEveryFunction: every function of every module has its parameter list.
func TestParamsCoverEveryFunction(t *testing.T) {
	for _, m := range All() {
		for name := range m.Functions {
			if _, ok := Params(m.Name + "." + name); !ok {
				t.Errorf("%s.%s: no parameters recorded", m.Name, name)
			}
		}
	}
	got, _ := Params("k8s.name")
	want := []Param{{"parts", false}, {"hash", true}, {"max_length", true}}
	if !slices.Equal(got, want) {
		t.Errorf("Params(k8s.name) = %v, want %v", got, want)
	}
	if _, ok := Params("k8s.nope"); ok {
		t.Error("Params knows a function no module has")
	}
}
