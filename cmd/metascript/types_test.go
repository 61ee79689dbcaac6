package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"metascript.dev/metascript/apis/hooks"
	"metascript.dev/metascript/cmd/metascript/internal/tsdecl"
)

// checkedIn is the declaration file in the repository, which make types regenerates.
var checkedIn = filepath.Join("..", "..", "types", tsdecl.FileName)

// TestCheckedInTypesAreCurrent: types/metascript.d.ts is what `metascript types` writes
// now, so that the declarations never disagree with the Go types and the stdlib.
func TestCheckedInTypesAreCurrent(t *testing.T) {
	want, err := tsdecl.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Fatalf("%v (make types writes it)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date with apis/hooks and the stdlib; regenerate it with: make types", checkedIn)
	}
}

func TestTypesCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := typesCommand(nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	if !strings.Contains(stdout.String(), "type CompositeControllerSync = ") {
		t.Errorf("stdout holds no declarations:\n%.300s", &stdout)
	}

	dir := filepath.Join(t.TempDir(), "new")
	stdout.Reset()
	if code := typesCommand([]string{"-o", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("-o: exit %d: %s", code, &stderr)
	}
	if stdout.Len() != 0 {
		t.Errorf("-o wrote to stdout too")
	}
	if _, err := os.Stat(filepath.Join(dir, tsdecl.FileName)); err != nil {
		t.Error(err)
	}

	if code := typesCommand([]string{"extra"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("an argument: exit %d, want %d", code, exitUsage)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := typesCommand([]string{"-o", file}, &stdout, &stderr); code != exitFailed {
		t.Errorf("-o naming a file: exit %d, want %d", code, exitFailed)
	}

	stderr.Reset()
	if code := typesCommand([]string{"-h"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("-h: exit %d", code)
	}
	for _, h := range hooks.Hooks {
		if !strings.Contains(stderr.String(), "metascript."+h.TypeName()) {
			t.Errorf("types -h does not name the type of %s's %s hook", h.Kind, h.Name)
		}
	}
}
