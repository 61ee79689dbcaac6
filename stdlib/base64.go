package stdlib

import (
	"encoding/base64"
	"unicode/utf8"
)

// Base64 is the base64 module. Strings are encoded as their UTF-8 bytes; decoding must yield
// valid UTF-8 text, since binary data cannot be held the same way in Starlark and JavaScript
// strings.
//
//	encode(text) -> string         standard alphabet, padded (RFC 4648 §4)
//	decode(data) -> string
//	url_encode(text) -> string     URL- and file-safe alphabet, padded (RFC 4648 §5)
//	url_decode(data) -> string
//	raw_url_encode(text) -> string URL-safe alphabet without padding, as in JWTs
//	raw_url_decode(data) -> string
//
// Decoding errors name the offset of the first bad byte.
var Base64 = &Module{
	Name: "base64",
	Functions: map[string]Func{
		"encode":         base64Encoder("base64.encode", base64.StdEncoding),
		"decode":         base64Decoder("base64.decode", base64.StdEncoding),
		"url_encode":     base64Encoder("base64.url_encode", base64.URLEncoding),
		"url_decode":     base64Decoder("base64.url_decode", base64.URLEncoding),
		"raw_url_encode": base64Encoder("base64.raw_url_encode", base64.RawURLEncoding),
		"raw_url_decode": base64Decoder("base64.raw_url_decode", base64.RawURLEncoding),
	},
}

func base64Encoder(fn string, enc *base64.Encoding) Func {
	return define(fn, []string{"text"}, func(env *Env, a *args) (any, error) {
		s, err := a.string(0)
		if err != nil {
			return nil, err
		}
		if err := a.reserve(env, int64(enc.EncodedLen(len(s)))); err != nil {
			return nil, err
		}
		return enc.EncodeToString([]byte(s)), nil
	})
}

func base64Decoder(fn string, enc *base64.Encoding) Func {
	return define(fn, []string{"data"}, func(env *Env, a *args) (any, error) {
		s, err := a.string(0)
		if err != nil {
			return nil, err
		}
		b, err := enc.DecodeString(s)
		if err != nil {
			return nil, a.argErrorf(0, "invalid base64: %v", err)
		}
		if !utf8.Valid(b) {
			return nil, a.argErrorf(0, "decoded bytes are not valid UTF-8 text")
		}
		return string(b), nil
	})
}
