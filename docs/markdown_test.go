// Package docs_test checks the documentation against the engine: every controller and hook
// shown compiles, every reason the engine records is explained, every reference page's
// hooks match the kinds, every link resolves.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, seen from this package.
var root = ".."

// pages are the Markdown files a reader of the docs meets: docs/ and its subfolders, the
// README and each example's README. Paths are relative to root.
func pages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, examples...)
	out = append(out, filepath.Join(root, "README.md"))
	sort.Strings(out)
	for i, p := range out {
		out[i], _ = filepath.Rel(root, p)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// block is one fenced code block of a page.
type block struct {
	page string
	line int // of the opening fence, 1-based
	// lang is the info string's first word (yaml, starlark); words are the rest (fragment).
	lang  string
	words []string
	text  string
}

func (b block) where() string { return b.page + ":" + strconv.Itoa(b.line) }

func (b block) marked(word string) bool {
	for _, w := range b.words {
		if w == word {
			return true
		}
	}
	return false
}

var fence = regexp.MustCompile("^( *)(```+|~~~+)(.*)$")

// blocks returns the fenced code blocks of text, each with its indentation removed.
func blocks(page, text string) []block {
	var out []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, marks := len(m[1]), m[2]
		info := strings.Fields(m[3])
		b := block{page: page, line: i + 1}
		if len(info) > 0 {
			b.lang, b.words = info[0], info[1:]
		}
		var body []string
		for i++; i < len(lines); i++ {
			if c := fence.FindStringSubmatch(lines[i]); c != nil && strings.HasPrefix(c[2], marks) && strings.TrimSpace(c[3]) == "" {
				break
			}
			line := lines[i]
			for n := 0; n < indent && strings.HasPrefix(line, " "); n++ {
				line = line[1:]
			}
			body = append(body, line)
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// proseLines returns the lines of text outside fenced code blocks, with their numbers.
func proseLines(text string) map[int]string {
	out := map[int]string{}
	lines := strings.Split(text, "\n")
	inside := ""
	for i, line := range lines {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case inside == "":
				inside = m[2]
				continue
			case strings.HasPrefix(m[2], inside) && strings.TrimSpace(m[3]) == "":
				inside = ""
				continue
			}
		}
		if inside == "" {
			out[i+1] = line
		}
	}
	return out
}
