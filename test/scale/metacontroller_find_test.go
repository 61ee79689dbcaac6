package scale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindMetacontroller checks where the phase looks for Metacontroller and that a missing
// binary or CRD folder is named, with how to give it.
func TestFindMetacontroller(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".cache", "metacontroller", metacontrollerVersion)
	for _, c := range []struct {
		name    string
		files   map[string]os.FileMode // under dir
		want    string                 // in the error; empty: found
		wantBin string
	}{
		{"nothing", nil, "no Metacontroller binary at " + filepath.Join(dir, "metacontroller"), ""},
		{"not executable", map[string]os.FileMode{"metacontroller": 0o644, "crds/crds.yaml": 0o644}, "no Metacontroller binary", ""},
		{"no CRDs", map[string]os.FileMode{"metacontroller": 0o755}, "no Metacontroller CRDs (*.yaml) in " + filepath.Join(dir, "crds"), ""},
		{"found", map[string]os.FileMode{"metacontroller": 0o755, "crds/crds.yaml": 0o644}, "", filepath.Join(dir, "metacontroller")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("METACONTROLLER_BIN", "")
			t.Setenv("METACONTROLLER_CRDS", "")
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			for name, mode := range c.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, mode); err != nil {
					t.Fatal(err)
				}
			}
			in, err := findMetacontroller(root)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v, want it found", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "METACONTROLLER_BIN")):
				t.Fatalf("error %v, want one containing %q and how to give it", err, c.want)
			case c.want == "" && in.bin != c.wantBin:
				t.Errorf("binary %s, want %s", in.bin, c.wantBin)
			}
		})
	}
}

// TestMetacontrollerLog reads the version and the error lines from Metacontroller's JSON log.
func TestMetacontrollerLog(t *testing.T) {
	log := `{"level":"info","msg":"Configuration information","workers":5,"version":"v4.17.2"}
{"level":"info","msg":"Starting controller"}
{"level":"error","msg":"can't update status","error":"conflict"}
`
	if v := loggedVersion(log); v != "v4.17.2" {
		t.Errorf("version %q, want v4.17.2", v)
	}
	if v := loggedVersion(`{"level":"info","msg":"started"}`); v != "unknown" {
		t.Errorf("version of a log without one: %q, want unknown", v)
	}
	if got, want := errorLines(log), `{"level":"error","msg":"can't update status","error":"conflict"}`+"\n"; got != want {
		t.Errorf("error lines %q, want %q", got, want)
	}
}
