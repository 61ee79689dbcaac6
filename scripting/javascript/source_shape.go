package javascript

import (
	"fmt"

	"metascript.dev/metascript/scripting"
)

// Limits on the shape of hook source, checked before goja parses it. goja's parser and
// compiler recurse once per nesting level with no depth limit of their own: a source of a
// million nested parentheses overflows the Go stack, which kills the whole process, and some
// nestings (object literals, arrow-function chains) compile in quadratic time. These limits
// are far beyond what a hook needs and keep a hostile source's compile to milliseconds.
const (
	// MaxSourceBytes bounds the source length (a ConfigMap holds at most 1 MiB).
	MaxSourceBytes = 1 << 20
	// MaxNesting bounds the nesting pressure: the bracket depth plus, at each open bracket
	// level, the number of operator characters in the current statement or list element
	// (each can start a right-recursive parse: `a=b=…`, `x=>y=>…`, `!!…`, `a?b:c?…`).
	MaxNesting = 1000
)

// checkSourceShape rejects sources whose length or nesting exceeds the limits above. It is a
// conservative over-approximation of the parser's recursion depth: it skips strings, template
// text and comments, and counts every operator character, unary or not.
func checkSourceShape(src string) *scripting.CompileError {
	if len(src) > MaxSourceBytes {
		return &scripting.CompileError{Language: scripting.JavaScript, Line: 1, Column: 1,
			Msg: fmt.Sprintf("source is %d bytes, more than the limit of %d", len(src), MaxSourceBytes)}
	}
	type level struct {
		opener   byte // '(', '[', '{', or '`' for a template substitution
		operands int  // operator characters in the current segment of this level
	}
	stack := make([]level, 1, 32)
	pressure := 0 // len(stack)-1 + sum of operands
	fail := func(what string, at int) *scripting.CompileError {
		line, col := charPosition(src, at)
		return &scripting.CompileError{Language: scripting.JavaScript, Line: line, Column: col,
			Msg: fmt.Sprintf("%s nests deeper than the limit of %d", what, MaxNesting)}
	}
	resetSegment := func() {
		top := &stack[len(stack)-1]
		pressure -= top.operands
		top.operands = 0
	}
	var lastSignificant byte // last non-space character outside comments and strings
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case ' ', '\t', '\r':
			continue
		case '\n':
			// A statement ending at a line break (ASI) ends the segment, unless an operator
			// on either side continues the expression across the break.
			if !isOperatorChar(lastSignificant) && !isOperatorChar(nextSignificant(src, i+1)) {
				resetSegment()
			}
			continue
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i+1 < len(src) && src[i+1] != '\n' {
					i++
				}
				continue
			}
			if i+1 < len(src) && src[i+1] == '*' {
				i += 2
				for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
					i++
				}
				i++
				continue
			}
		case '\'', '"':
			for i++; i < len(src) && src[i] != c && src[i] != '\n'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
			lastSignificant = c
			continue
		case '`':
			i = scanTemplate(src, i+1)
			if i < len(src) && src[i] == '{' {
				// Inside a ${ substitution: the matching } resumes the template text.
				stack = append(stack, level{opener: '`'})
				pressure++
				if pressure > MaxNesting {
					return fail("expression", i)
				}
				continue
			}
			lastSignificant = '`'
			continue
		case '(', '[', '{':
			stack = append(stack, level{opener: c})
			pressure++
			if pressure > MaxNesting {
				return fail("brackets", i)
			}
		case ')', ']', '}':
			if len(stack) > 1 {
				top := stack[len(stack)-1]
				pressure -= top.operands + 1
				stack = stack[:len(stack)-1]
				if c == '}' && top.opener == '`' {
					i = scanTemplate(src, i+1)
					if i < len(src) && src[i] == '{' {
						stack = append(stack, level{opener: '`'})
						pressure++
						continue
					}
					lastSignificant = '`'
					continue
				}
			}
		case ';', ',':
			resetSegment()
		default:
			if isOperatorChar(c) {
				stack[len(stack)-1].operands++
				pressure++
				if pressure > MaxNesting {
					return fail("expression", i)
				}
			}
		}
		lastSignificant = c
	}
	return nil
}

// isOperatorChar reports characters that may start a recursive parse of an operand.
func isOperatorChar(c byte) bool {
	switch c {
	case '=', '?', '!', '~', '-', '+', '*', ':', '>':
		return true
	}
	return false
}

func nextSignificant(src string, i int) byte {
	for ; i < len(src); i++ {
		switch src[i] {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return src[i]
	}
	return 0
}

// scanTemplate skips template text starting at i, just after a backquote or the } closing a
// substitution. It returns the index of the closing backquote, of the { of a ${ substitution,
// or len(src).
func scanTemplate(src string, i int) int {
	for ; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '`':
			return i
		case '$':
			if i+1 < len(src) && src[i+1] == '{' {
				return i + 1
			}
		}
	}
	return i
}
