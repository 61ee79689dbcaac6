// Package jsontext writes JSON strings and numbers byte for byte as encoding/json does, for
// the encoders that write JSON without reflection (the Starlark json module, the engine's
// request bodies).
package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendFloat appends f as encoding/json does: like ES6, exponent form only below 1e-6 and
// from 1e21 on. f must be finite; encoding/json refuses NaN and infinities.
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 becomes e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// plainByte[html][c] says whether the byte c is ASCII written as it is, with html escaping
// or without. A table makes the common case, a string with nothing to escape, one load and
// one branch per byte: most strings of a Kubernetes object are names, keys and UIDs.
var plainByte = func() (t [2][256]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[0][c] = c != '"' && c != '\\'
		t[1][c] = t[0][c] && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s quoted as encoding/json does: invalid UTF-8 as U+FFFD, U+2028 and
// U+2029 escaped, and with html (encoding/json's default) '<', '>' and '&' escaped too.
func AppendString(b []byte, s string, html bool) []byte {
	plain := &plainByte[0]
	if html {
		plain = &plainByte[1]
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
