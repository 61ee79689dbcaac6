package tsdecl

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"metascript.dev/metascript/stdlib"
)

func TestParseReference(t *testing.T) {
	page, err := os.ReadFile("testdata/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := parseReference(string(page))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*moduleDoc{
		"m": {prose: "M is the m module.\n\nConditions. Prose kept.\n\nClosing words.", funcs: []funcDoc{
			{name: "one", params: []refParam{{"a", ""}, {"b", `"x"`}}, result: "string", text: "short text"},
			{name: "two", params: []refParam{{"msg", ""}, {"fields", "null"}}, result: "dict or null", text: "First line.\nSecond line."},
			{name: "three", result: "[before, after, found]", text: "around sep"},
		}},
	}
	if !reflect.DeepEqual(mods, want) {
		t.Errorf("parsed %#v\nwant %#v", mods["m"], want["m"])
	}
	if _, err := parseReference("## m\n\n```\n  indented first\n```\n"); err == nil || !strings.Contains(err.Error(), "REFERENCE.md:4") {
		t.Errorf("an indented line before any function: %v", err)
	}
	if _, err := parseReference("## m\n\n```\nnot a signature\n```\n"); err == nil || !strings.Contains(err.Error(), "REFERENCE.md:4") {
		t.Errorf("a line that is no signature: %v", err)
	}
}

// TestStdlibTypesAreTheRegistry: stdlibTypes has a signature for every function of every
// module, and none for a function no module has.
func TestStdlibTypesAreTheRegistry(t *testing.T) {
	n := 0
	for _, m := range stdlib.All() {
		for name := range m.Functions {
			n++
			if _, ok := stdlibTypes[m.Name+"."+name]; !ok {
				t.Errorf("%s.%s: no entry in stdlibTypes", m.Name, name)
			}
		}
	}
	if len(stdlibTypes) != n {
		t.Errorf("stdlibTypes has %d entries for %d functions", len(stdlibTypes), n)
	}
}

// TestSignatureChecksThePage: a reference page that names a parameter otherwise than the
// registry, or shows it optional when it is not, is refused.
func TestSignatureChecksThePage(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    funcDoc
		want string
	}{
		{"agrees", funcDoc{name: "short", params: []refParam{{"text", ""}, {"length", "10"}}}, ""},
		{"other name", funcDoc{name: "short", params: []refParam{{"s", ""}, {"length", "10"}}}, `parameter 1 is "s="`},
		{"required shown optional", funcDoc{name: "short", params: []refParam{{"text", `""`}, {"length", "10"}}}, "parameter 1"},
		{"one missing", funcDoc{name: "short", params: []refParam{{"text", ""}}}, "shows 1 parameters, the function has 2"},
	} {
		got, err := signature("hash.short", tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && got != "short(text: string, length?: number | null): string":
			t.Errorf("%s: signature %q", tc.name, got)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := signature("hash.nope", funcDoc{name: "nope"}); err == nil {
		t.Error("a function the registry lacks was given a signature")
	}
}
