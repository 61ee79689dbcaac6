package starlark

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenStart corrects the position of a go.starlark.net syntax error that names the token it
// stopped at ("got return, want ','", "< does not associate with <"): the parser reports such
// errors at the scanner's position, just past that token, and a reader looks for the token
// itself. line and col are 1-based, col counting characters as go.starlark.net does; msg is
// the error's message. Other errors, and positions it cannot place, are returned unchanged.
func tokenStart(src string, line, col int, msg string) (int, int) {
	name, ok := namedToken(msg)
	if !ok {
		return line, col
	}
	off, ok := offsetOf(src, line, col)
	if !ok {
		return line, col
	}
	start := off
	switch name {
	case "newline":
		// Reported at the start of the next line; the newline ends the line before.
		if col == 1 && off > 0 && src[off-1] == '\n' {
			start = off - 1
			if start > 0 && src[start-1] == '\r' {
				start--
			}
		}
	case "indent", "outdent", "end of file", "illegal token":
	case "identifier":
		start = backOver(src, off, isIdentRune)
	case "int literal", "float literal":
		start = backOver(src, off, func(r rune) bool { return isIdentRune(r) || r == '.' })
	case "string literal", "bytes literal":
		start = stringEndingAt(src, off)
	default: // punctuation ('=') or a keyword (return)
		text := strings.Trim(name, "'")
		if !strings.HasPrefix(src[off:], text) && strings.HasSuffix(src[:off], text) {
			start = off - len(text)
		}
	}
	return lineCol(src, start)
}

// namedToken returns the token an error message names as the one the parser stopped at.
func namedToken(msg string) (string, bool) {
	if rest, ok := strings.CutPrefix(msg, "got "); ok {
		for _, end := range []string{", want", " after expression"} {
			if i := strings.Index(rest, end); i > 0 {
				return rest[:i], true
			}
		}
		return "", false
	}
	if _, rest, ok := strings.Cut(msg, " does not associate with "); ok {
		op, _, ok := strings.Cut(rest, " (use parens)")
		return op, ok
	}
	return "", false
}

func isIdentRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// backOver moves back from off over the characters in, to the start of the token that ends
// at off.
func backOver(src string, off int, in func(rune) bool) int {
	for off > 0 {
		r, size := utf8.DecodeLastRuneInString(src[:off])
		if !in(r) {
			break
		}
		off -= size
	}
	return off
}

// stringEndingAt returns where the string literal that ends at off starts (its r or b prefix
// included), or off when no literal ends there. It reads src from the start, skipping
// comments, since a literal may span lines and hold quotes of the other kind.
func stringEndingAt(src string, off int) int {
	for i := 0; i < off; {
		switch c := src[i]; {
		case c == '#':
			nl := strings.IndexByte(src[i:], '\n')
			if nl < 0 {
				return off
			}
			i += nl
		case c == '\'' || c == '"':
			delim := src[i : i+1]
			if strings.HasPrefix(src[i:], strings.Repeat(delim, 3)) {
				delim = strings.Repeat(delim, 3)
			}
			end := i + len(delim)
			for end < len(src) && !strings.HasPrefix(src[end:], delim) {
				if src[end] == '\\' {
					end++
				} else if src[end] == '\n' && len(delim) == 1 {
					break // unterminated; the scanner said so
				}
				end++
			}
			end += len(delim)
			if end == off {
				return stringPrefixStart(src, i)
			}
			i = end
		default:
			i++
		}
	}
	return off
}

// stringPrefixStart includes a literal's r, b, rb or br prefix, which starts at most two
// bytes before its quote.
func stringPrefixStart(src string, quote int) int {
	start := quote
	for start > 0 && quote-start < 2 && strings.IndexByte("rRbB", src[start-1]) >= 0 {
		start--
	}
	if start > 0 && isIdentRune(rune(src[start-1])) {
		return quote // an identifier ending in r or b, not a prefix
	}
	return start
}

// offsetOf is the byte offset of a 1-based line and character column.
func offsetOf(src string, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		nl := strings.IndexByte(src[off:], '\n')
		if nl < 0 {
			return 0, false
		}
		off += nl + 1
	}
	for c := 1; c < col; c++ {
		if off >= len(src) || src[off] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRuneInString(src[off:])
		off += size
	}
	return off, true
}

// lineCol is the 1-based line and character column of a byte offset.
func lineCol(src string, off int) (int, int) {
	before := src[:off]
	line := strings.Count(before, "\n") + 1
	return line, utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
}
