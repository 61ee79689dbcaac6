package types

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var tsc = flag.String("tsc", "", "the TypeScript compiler (types/node_modules/.bin/tsc); without it TestTypeCheck is skipped")

// TestExtract: a controller's inline JavaScript becomes a file whose lines are the
// controller file's, each hook function typed as its hook.
func TestExtract(t *testing.T) {
	yamlFile, err := os.ReadFile("testdata/controller.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := Extract(yamlFile, "metascript.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, s := range srcs {
		got.WriteString("=== line " + strconv.Itoa(s.Line) + "\n" + s.Text)
	}
	want, err := os.ReadFile("testdata/controller.yaml.js")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("extracted:\n%s\nwant testdata/controller.yaml.js:\n%s", &got, want)
	}
	// Every source line is on the controller file's line and column.
	yamlLines := strings.Split(string(yamlFile), "\n")
	for _, s := range srcs {
		for i, l := range strings.Split(s.Text, "\n") {
			if i+1 >= s.Line && l != "" && !strings.Contains(l, "@type") && i < len(yamlLines) && l != yamlLines[i] {
				t.Errorf("line %d: %q, the controller file has %q", i+1, l, yamlLines[i])
			}
		}
	}
}

func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no source", "kind: CompositeController\nspec:\n  hooks:\n    sync:\n      javascript: {function: sync}\n", "no inline source"},
		{"source at the top", "kind: CompositeController\nspec: {hooks: {sync: {javascript: {source: 'function sync(r) {}'}}}}\n", "cannot keep its line numbers"},
	} {
		if _, err := Extract([]byte(tc.yaml), "d.ts"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestTypeCheck runs tsc over the example hooks of this folder (tsconfig.json, strict) and
// over the JavaScript of every example controller, each hook function typed as its hook
// and the rest of the code as plain JavaScript (not strict: its helpers carry no JSDoc);
// tsc's messages name the controller file, line and column. make check-types runs it.
func TestTypeCheck(t *testing.T) {
	if *tsc == "" {
		t.Skip("no -tsc; make check-types installs the compiler and runs this test")
	}
	decl, err := filepath.Abs("metascript.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	controllers, err := filepath.Glob(filepath.Join("..", "examples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example hooks carry their JSDoc types: they are checked strictly, as tsconfig.json says.
	if out, err := exec.Command(*tsc, "-p", "tsconfig.json", "--pretty", "false").CombinedOutput(); err != nil {
		t.Fatalf("tsc -p types/tsconfig.json: %v\n%s", err, out)
	}
	dir := t.TempDir()
	files := []string{decl}
	origin := map[string]string{} // extracted file's name -> controller file
	for _, c := range controllers {
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		srcs, err := Extract(data, decl)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for _, s := range srcs {
			name := "source-" + strconv.Itoa(len(origin)) + ".js"
			if err := os.WriteFile(filepath.Join(dir, name), []byte(s.Text), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
			origin[name] = strings.TrimPrefix(filepath.ToSlash(c), "../")
		}
	}
	if len(origin) < 5 {
		t.Fatalf("%d JavaScript sources in examples/; the extraction finds too few", len(origin))
	}
	config, _ := json.Marshal(map[string]any{"compilerOptions": compilerOptions, "files": files})
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(*tsc, "-p", "tsconfig.json", "--pretty", "false")
	cmd.Dir = dir // tsc names the extracted files relative to it: source-N.js
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	var failed, inferred []string
	for _, d := range diagnostics(string(out)) {
		for name, c := range origin {
			d = strings.Replace(d, name+"(", c+"(", 1)
		}
		if ownLiteral.MatchString(d) {
			inferred = append(inferred, d)
			continue
		}
		failed = append(failed, d)
	}
	for _, d := range inferred {
		t.Logf("not the declarations' (a type TypeScript inferred from the hook's own literals): %s", d)
	}
	if len(failed) > 0 || err != nil && len(inferred) == 0 {
		t.Fatalf("tsc: %v\n%s", err, strings.Join(failed, "\n"))
	}
	t.Logf("tsc checked the example hooks and %d controller sources", len(origin))
}

// ownLiteral matches the diagnostic of an object literal refused by a type TypeScript
// inferred for a hook's own variable from the literals it was first given (an array of
// rules, then one of another shape pushed onto it): JavaScript's inference, not something
// the declarations say, and no error when the engine runs the hook.
var ownLiteral = regexp.MustCompile(`error TS2353: Object literal may only specify known properties, and '[^']*' does not exist in type '\{`)

// diagnostics splits tsc's --pretty false output into one string per diagnostic, its
// indented continuation lines included.
func diagnostics(out string) []string {
	var ds []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.HasPrefix(l, " ") && len(ds) > 0 {
			ds[len(ds)-1] += "\n" + l
			continue
		}
		if l != "" {
			ds = append(ds, l)
		}
	}
	return ds
}

// compilerOptions are those of tsconfig.json but strict, for the extracted sources.
var compilerOptions = map[string]any{
	"allowJs": true, "checkJs": true, "noEmit": true, "strict": false,
	"target": "es2020", "lib": []string{"es2020"}, "types": []string{},
}
