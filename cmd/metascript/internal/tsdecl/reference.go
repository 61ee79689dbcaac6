package tsdecl

import (
	"fmt"
	"regexp"
	"strings"
)

// moduleDoc is one module's section of the stdlib reference page (stdlib/REFERENCE.md).
type moduleDoc struct {
	// prose is the section's text outside code blocks.
	prose string
	// funcs are the functions its code blocks describe, in the page's order.
	funcs []funcDoc
}

// funcDoc is one function as the reference page writes it:
//
//	name(a, b=default, **kw) -> result   what it does
//	    more of what it does
type funcDoc struct {
	name   string
	params []refParam
	result string
	text   string
}

// refParam is a parameter of the reference page's signature; def is its default, "" for a
// required one.
type refParam struct{ name, def string }

var funcLine = regexp.MustCompile(`^([a-z_][a-z0-9_]*)\(([^)]*)\)(?: -> (\[[^\]]*\]|\S+(?: or \S+)*))?\s*(.*)$`)

// parseReference reads the reference page into its modules' sections by name.
func parseReference(page string) (map[string]*moduleDoc, error) {
	mods := map[string]*moduleDoc{}
	var cur *moduleDoc
	var fn *funcDoc
	var prose []string
	inCode := false
	flush := func() {
		if cur != nil {
			cur.prose = paragraphs(prose)
		}
	}
	for i, l := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			flush()
			cur, fn, prose = &moduleDoc{}, nil, nil
			mods[strings.TrimPrefix(l, "## ")] = cur
		case cur == nil:
		case strings.HasPrefix(l, "```"):
			inCode, fn = !inCode, nil
			if !inCode {
				prose = append(prose, "")
			}
		case !inCode:
			prose = append(prose, l)
		case strings.TrimSpace(l) == "":
		case l[0] == ' ':
			if fn == nil {
				return nil, fmt.Errorf("REFERENCE.md:%d: an indented line before any function", i+1)
			}
			fn.text = strings.TrimSpace(fn.text + "\n" + strings.TrimSpace(l))
		default:
			m := funcLine.FindStringSubmatch(l)
			if m == nil {
				return nil, fmt.Errorf("REFERENCE.md:%d: %q is not a function's signature", i+1, l)
			}
			cur.funcs = append(cur.funcs, funcDoc{name: m[1], result: m[3], text: strings.TrimSpace(m[4])})
			fn = &cur.funcs[len(cur.funcs)-1]
			for _, p := range strings.Split(m[2], ",") {
				p = strings.TrimSpace(p)
				if p == "" || strings.HasPrefix(p, "**") {
					continue
				}
				name, def, _ := strings.Cut(p, "=")
				fn.params = append(fn.params, refParam{name, def})
			}
		}
	}
	flush()
	return mods, nil
}

// paragraphs joins a section's prose lines with one blank line between paragraphs. A
// paragraph of one line without punctuation is the heading of the code block after it,
// which the declarations show by themselves: it is left out.
func paragraphs(lines []string) string {
	var out []string
	var para []string
	end := func() {
		if len(para) == 1 && !strings.ContainsAny(para[0], ".:") {
			para = nil
		}
		if len(para) > 0 {
			out = append(out, strings.Join(para, "\n"))
		}
		para = nil
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			end()
			continue
		}
		para = append(para, l)
	}
	end()
	return strings.Join(out, "\n\n")
}
