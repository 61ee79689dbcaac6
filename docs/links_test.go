package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// link is a Markdown inline link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks fails on a relative link of the docs whose file does not exist, or whose
// #anchor names no heading of the file it points to.
func TestLinks(t *testing.T) {
	for _, page := range pages(t) {
		text := read(t, page)
		for n, line := range proseLines(text) {
			for _, m := range link.FindAllStringSubmatch(stripCode(line), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", page, n, target)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if !anchors(t, dest)[anchor] {
					t.Errorf("%s:%d: link to %s: %s has no heading #%s", page, n, target, dest, anchor)
				}
			}
		}
	}
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// stripCode drops inline code spans, which hold no links.
func stripCode(line string) string { return inlineCode.ReplaceAllString(line, "``") }

var headingLine = regexp.MustCompile(`^#{1,6} (.+?)\s*$`)

// anchors are the ids GitHub gives the headings of a Markdown file: lower case, punctuation
// dropped except - and _, spaces as -, a repeated id suffixed -1, -2, ...
func anchors(t *testing.T, page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(read(t, page)) {
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := slug(m[1])
		if k := seen[id]; k > 0 {
			out[id+"-"+strconv.Itoa(k)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToUpper(string(r)) != strings.ToLower(string(r)) }

// TestSlug: anchors as GitHub makes them.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Tracing what a controller did":                  "tracing-what-a-controller-did",
		"Failures and `Retry-After`":                     "failures-and-retry-after",
		"The isolated tier: `spec.isolation: Process`":   "the-isolated-tier-specisolation-process",
		"Measured: a budget-burning neighbour":           "measured-a-budget-burning-neighbour",
		"Sharding: replicas that share the work":         "sharding-replicas-that-share-the-work",
		"CompositeControllerSpec":                        "compositecontrollerspec",
		"1. Validate":                                    "1-validate",
		"When Secrets and ConfigMaps are read":           "when-secrets-and-configmaps-are-read",
		"Hooks, shared scripts and budgets":              "hooks-shared-scripts-and-budgets",
		"What the engine writes on the target, and what": "what-the-engine-writes-on-the-target-and-what",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
