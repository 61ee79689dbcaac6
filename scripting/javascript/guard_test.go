package javascript

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGuardFamilyPerFile holds the registry to its layout: every guard_<family>.go file
// registers the family of its name, and no family is registered elsewhere.
func TestGuardFamilyPerFile(t *testing.T) {
	files, err := filepath.Glob("guard_*.go")
	if err != nil {
		t.Fatal(err)
	}
	var fromFiles []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		family := strings.TrimSuffix(strings.TrimPrefix(f, "guard_"), ".go")
		fromFiles = append(fromFiles, family)
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), `registerGuards("`+family+`"`) {
			t.Errorf("%s does not register the %q family", f, family)
		}
	}
	var registered []string
	for family := range guardFamilies {
		registered = append(registered, family)
	}
	slices.Sort(registered)
	if !slices.Equal(fromFiles, registered) {
		t.Errorf("families registered: %v; guard files: %v", registered, fromFiles)
	}
}

// TestGuardFamiliesWrapApart checks that installing the families claims each built-in once:
// a second claim, which would make the families' order matter, panics.
func TestGuardFamiliesWrapApart(t *testing.T) {
	h := newHardRuntime() // would have panicked on a built-in wrapped twice
	if h.wrapped != nil {
		t.Fatal("the claims outlive installGuards")
	}
	h.wrapped, h.family = map[wrappedKey]string{}, "first"
	stringProto := h.prototype("String")
	h.claim(stringProto, "repeat")
	h.family = "second"
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "first and second both wrap repeat") {
			t.Fatalf("a second claim: %v", r)
		}
	}()
	h.claim(stringProto, "repeat")
}
