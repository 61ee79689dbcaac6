package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/pages/*.golden.md")

// TestReferenceUpToDate fails when a table of docs/reference differs from what the Go types
// of apis/v1alpha1 say, or when a type the controller resources use has no table. Fix it
// with: make docs
func TestReferenceUpToDate(t *testing.T) {
	ref, err := loadReference(filepath.Join("..", "..", "apis", "v1alpha1"), filepath.Join("..", "..", "docs", "reference"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.pages) == 0 {
		t.Fatal("no reference pages found")
	}
	if missing := ref.missing(roots); len(missing) > 0 {
		t.Errorf("no table of %v in docs/reference: add a region for each", missing)
	}
	stale, err := ref.stale()
	if err != nil {
		t.Fatal(err)
	}
	for path := range stale {
		t.Errorf("%s is out of date with apis/v1alpha1: run make docs", path)
	}
}

// TestGenerate renders the fixture page from the fixture types and compares it with its
// golden file; -update rewrites the golden file.
func TestGenerate(t *testing.T) {
	ref, err := loadReference(filepath.Join("testdata", "api"), filepath.Join("testdata", "pages"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.pages) != 1 {
		t.Fatalf("want the one fixture page, got %d", len(ref.pages))
	}
	got, err := ref.pages[0].generate(ref.tables)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "widget.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("generated page differs from %s (-update rewrites it):\n%s", golden, got)
	}
	// Generating a generated page changes nothing.
	if p2, err := readPageText(ref.pages[0].path, got); err != nil {
		t.Fatal(err)
	} else if again, err := p2.generate(ref.tables); err != nil || again != got {
		t.Errorf("second run changed the page (err %v)", err)
	}
	if missing := ref.missing([]string{"WidgetSpec"}); strings.Join(missing, ",") != "Unlisted" {
		t.Errorf("missing = %v, want [Unlisted]", missing)
	}
}

// TestBrokenPages: each fixture under testdata/broken is refused with a located error.
func TestBrokenPages(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"heading.md", `heading.md:4: the region of Part must follow a heading that is exactly "Part"`},
		{"unclosed.md", "unclosed.md:4: fields:begin Part is never closed"},
		{"stray-end.md", "stray-end.md:3: fields:end without fields:begin"},
		{"unknown.md", "unknown.md:4: no type Gadget in the API package"},
		{"not-struct.md", "not-struct.md:4: Mode is not a struct type"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			data, err := os.ReadFile(filepath.Join("testdata", "broken", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tc.file), data, 0o644); err != nil {
				t.Fatal(err)
			}
			ref, err := loadReference(filepath.Join("testdata", "api"), dir)
			if err == nil {
				_, err = ref.stale()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestFieldDefault(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		markers []string
		want    string
	}{
		{"Isolation says where hooks run; default InProcess.", nil, "InProcess"},
		{"Function is the function to call. Defaults to the hook's name (sync, finalize).", nil, "the hook's name (sync, finalize)"},
		{"UpdateStrategy defaults to OnDelete: existing attachments are never updated.", nil, "OnDelete"},
		{"Key defaults to ca.crt.", nil, "ca.crt"},
		{"Type is the scheme; default Bearer. Never Basic.", nil, "Bearer"},
		{"Protocol is http (default) or https.", nil, "http"},
		{"FieldPaths defaults to [\"spec\"].", nil, `["spec"]`},
		// Defaults of something else than the field itself.
		{"SecretRef reads a Secret (default key ca.crt).", nil, ""},
		{"It names an account of the namespace and defaults to \"default\".", nil, ""},
		{"Unset fields take the engine's defaults; every field is capped.", nil, ""},
		{"Replicas to run.", []string{"optional", "kubebuilder:default=1"}, "1"},
	} {
		if got := fieldDefault(field{Doc: tc.doc, Markers: tc.markers}); got != tc.want {
			t.Errorf("fieldDefault(%q) = %q, want %q", tc.doc, got, tc.want)
		}
	}
}

// TestRun: -check exits 1 naming an out-of-date page, and leaves it alone; without -check
// the page is rewritten and a second -check passes.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "pages", "widget.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "widget.md")
	if err := os.WriteFile(page, src, 0o644); err != nil {
		t.Fatal(err)
	}
	api := filepath.Join("testdata", "api")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check", "-apis", api, "-docs", dir}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "widget.md is out of date") {
		t.Fatalf("-check on a stale page: exit %d, stderr %q", code, stderr.String())
	}
	if now, _ := os.ReadFile(page); !bytes.Equal(now, src) {
		t.Fatal("-check wrote the page")
	}
	// Unlisted has no table, but WidgetSpec is no root of the real API: only staleness counts here.
	stderr.Reset()
	run([]string{"-apis", api, "-docs", dir}, &stdout, &stderr)
	if strings.Contains(stderr.String(), "out of date") {
		t.Fatalf("rewrite reported: %s", stderr.String())
	}
	stderr.Reset()
	run([]string{"-check", "-apis", api, "-docs", dir}, &stdout, &stderr)
	if strings.Contains(stderr.String(), "out of date") {
		t.Fatalf("-check after a rewrite: %s", stderr.String())
	}
	if code := run([]string{"-nope"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}
