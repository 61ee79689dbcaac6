// Package hooktest holds what the adapters' tests and benchmarks share: compiling a fixture,
// the request the tests call hooks with, and the benchmark of the sync logic in benchsync.
package hooktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/benchsync"
)

// Fixture compiles testdata/<file> with rt, under the name file.
func Fixture(t testing.TB, rt *scripting.Runtime, lang scripting.Language, file string) scripting.Program {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.Compile(lang, file, string(src))
	if err != nil {
		t.Fatalf("compile %s: %v", file, err)
	}
	return p
}

// Request returns a fresh request; tests compare it afterwards to prove it was not written.
func Request() map[string]any {
	return map[string]any{
		"parent": map[string]any{
			"metadata": map[string]any{"name": "demo", "labels": map[string]any{"app": "demo"}},
			"spec":     map[string]any{"replicas": int64(3), "ratio": 0.5, "tags": []any{"a", "b"}},
		},
	}
}

// BenchSync compares the Go floor (benchsync.Go) with prog, the same logic in lang, through
// the public scripting API, conversion included.
func BenchSync(b *testing.B, lang scripting.Language, prog scripting.Program) {
	for _, n := range []int{10, 1000} {
		req := benchsync.Request(n)
		b.Run(fmt.Sprintf("go/children=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchsync.Go(req)
			}
		})
		b.Run(fmt.Sprintf("%s/children=%d", lang, n), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := prog.Call(ctx, scripting.Invocation{Function: "sync", Request: req}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Libraries reads the libraries under testdata/<dir>: each folder is a library named by the
// folder, each NAME.star or NAME.js file in it a module.
func Libraries(t testing.TB, dir string) *scripting.LibrarySet {
	t.Helper()
	set := &scripting.LibrarySet{ScopeName: "HookLibrary", ByName: map[string]*scripting.Library{}}
	libs, err := os.ReadDir(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		files, err := os.ReadDir(filepath.Join("testdata", dir, l.Name()))
		if err != nil {
			t.Fatal(err)
		}
		mods := map[string]scripting.LibraryModule{}
		for _, f := range files {
			src, err := os.ReadFile(filepath.Join("testdata", dir, l.Name(), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			ext := filepath.Ext(f.Name())
			lang := scripting.Starlark
			if ext == ".js" {
				lang = scripting.JavaScript
			}
			mods[f.Name()[:len(f.Name())-len(ext)]] = scripting.LibraryModule{Language: lang, Source: string(src)}
		}
		set.ByName[l.Name()] = scripting.NewLibrary(l.Name(), mods)
	}
	return set
}
