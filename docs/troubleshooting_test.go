package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// recorded is what the engine's source records: Event reasons, condition reasons and
// condition types, each with the first place it is written.
type recorded map[string]string

// scanRecorded reads the non-test Go files under dirs (relative to root) and collects the
// string literals the engine records, found by how they are written:
//
//   - the reason argument of X.Event(obj, type, "Reason", msg) and r.warn(obj, "Reason", err);
//   - a literal assigned to a variable, field or map key named reason (any case):
//     reason := "X"; cond["reason"] = "X"; {reason: "X"}; {"reason": "X"};
//   - the value of a constant whose name ends or starts with Condition (condition types).
func scanRecorded(t *testing.T, dirs ...string) recorded {
	t.Helper()
	out := recorded{}
	fset := token.NewFileSet()
	add := func(lit ast.Expr) {
		bl, ok := lit.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(bl.Value)
		if err != nil || s == "" {
			return
		}
		if _, seen := out[s]; !seen {
			pos := fset.Position(bl.Pos())
			rel, _ := filepath.Rel(root, pos.Filename)
			out[s] = rel + ":" + strconv.Itoa(pos.Line)
		}
	}
	reasonName := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return strings.Contains(strings.ToLower(x.Name), "reason")
		case *ast.BasicLit:
			return x.Value == `"reason"`
		case *ast.IndexExpr:
			bl, ok := x.Index.(*ast.BasicLit)
			return ok && bl.Value == `"reason"`
		case *ast.SelectorExpr:
			return strings.Contains(strings.ToLower(x.Sel.Name), "reason")
		}
		return false
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					sel, ok := x.Fun.(*ast.SelectorExpr)
					switch {
					case ok && (sel.Sel.Name == "Event" || sel.Sel.Name == "event") && len(x.Args) == 4:
						add(x.Args[2]) // a recorder's Event, or a runner's event (its rate of failure Events)
					case ok && sel.Sel.Name == "warn" && len(x.Args) == 3:
						add(x.Args[1])
					}
				case *ast.AssignStmt:
					if len(x.Lhs) == len(x.Rhs) {
						for i, lhs := range x.Lhs {
							if reasonName(lhs) {
								add(x.Rhs[i])
							}
						}
					}
				case *ast.KeyValueExpr:
					if reasonName(x.Key) {
						add(x.Value)
					}
				case *ast.ValueSpec:
					for i, name := range x.Names {
						if (strings.HasSuffix(name.Name, "Condition") || strings.HasPrefix(name.Name, "Condition")) && i < len(x.Values) {
							add(x.Values[i])
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

const troubleshooting = "docs/troubleshooting.md"

// tableKey is the first cell of a table row when it is one backticked word: | `HookFailed` |
var tableKey = regexp.MustCompile("^\\| `([A-Za-z]+)` \\|")

// TestTroubleshootingCoversEngine fails when the engine records a reason or condition type
// that docs/troubleshooting.md does not explain (as the first cell of a table row), or when
// the page explains one the engine no longer records.
func TestTroubleshootingCoversEngine(t *testing.T) {
	found := scanRecorded(t, "engine", "apis")
	// The scan must see what the engine is known to record, or it proves nothing.
	for _, known := range []string{"HookFailed", "HookBudgetExceeded", "InvalidHookResponse", "WriteFailed",
		"Synced", "InvalidSpec", "CompileError", "Ready", "HooksCompiled", "RolledOut", "Mapped", "MapFailed", "BudgetCapped"} {
		if _, ok := found[known]; !ok {
			t.Errorf("the scan of engine/ found no %s: the way the engine records it changed; teach scanRecorded", known)
		}
	}
	explained := map[string]int{}
	for n, line := range proseLines(read(t, troubleshooting)) {
		if m := tableKey.FindStringSubmatch(line); m != nil {
			explained[m[1]] = n
		}
	}
	var names []string
	for name := range found {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := explained[name]; !ok {
			t.Errorf("%s records %q, which %s does not explain: add a row | `%s` | ...", found[name], name, troubleshooting, name)
		}
	}
	for name, line := range explained {
		if _, ok := found[name]; !ok {
			t.Errorf("%s:%d: %q is explained, but the engine does not record it", troubleshooting, line, name)
		}
	}
}

// TestScanRecorded: the scan finds reasons in each way the engine writes them, and nothing
// else, on the fixture testdata/recorded/recorded.go.
func TestScanRecorded(t *testing.T) {
	got := scanRecorded(t, filepath.Join("docs", "testdata", "recorded"))
	want := []string{"AssignedReason", "BuiltReason", "EventReason", "IndexedReason", "KeyedReason",
		"MapReason", "OtherCondition", "SomeCondition", "WarnReason"}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("found %v, want %v", names, want)
	}
}
