package javascript

import (
	"strings"
	"unicode/utf8"
)

// sourcePosition turns a position goja reports in src (a 1-based line and a 1-based column
// counted in bytes) into the one a reader looks for: the column counted in characters, as
// Starlark's positions are, and an "Unexpected token X" that goja places on the token after
// X (a second comma in an object literal) moved back onto X. Positions it cannot place are
// returned unchanged.
func sourcePosition(src string, line, byteCol int, msg string) (int, int) {
	lineStart := 0
	for l := 1; l < line; l++ {
		nl := strings.IndexByte(src[lineStart:], '\n')
		if nl < 0 {
			return line, byteCol
		}
		lineStart += nl + 1
	}
	off := lineStart + byteCol - 1
	if byteCol < 1 || off > len(src) {
		return line, byteCol
	}
	if text, ok := strings.CutPrefix(msg, "Unexpected token "); ok && text != "ILLEGAL" && !strings.HasPrefix(src[off:], text) {
		before := strings.TrimRight(src[:off], " \t\r\n")
		if strings.HasSuffix(before, text) {
			off = len(before) - len(text)
		}
	}
	return charPosition(src, off)
}

// charPosition is the 1-based line and character column of byte offset off of src.
func charPosition(src string, off int) (int, int) {
	before := src[:off]
	start := strings.LastIndexByte(before, '\n') + 1
	return strings.Count(before, "\n") + 1, utf8.RuneCountInString(before[start:]) + 1
}
