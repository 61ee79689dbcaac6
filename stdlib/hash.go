package stdlib

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
)

// Hash is the hash module. Strings are hashed as their UTF-8 bytes.
//
//	sha256(text) -> string
//	    Lowercase hex SHA-256 digest (64 characters).
//	short(text, length=10) -> string
//	    The first length characters (1 to 52) of the SHA-256 digest in lowercase base32hex
//	    (0-9, a-v): stable across releases and languages, 5 bits per character, and valid
//	    anywhere in a DNS-1123 label. Ten characters give 50 bits.
var Hash = &Module{
	Name: "hash",
	Functions: map[string]Func{
		"sha256": define("hash.sha256", []string{"text"}, hashSHA256),
		"short":  define("hash.short", []string{"text", "length?"}, hashShort),
	},
}

// DefaultShortHashLength is the default length of hash.short and of k8s.name suffixes.
const DefaultShortHashLength = 10

// maxShortHashLength is the base32 length of a SHA-256 digest without padding.
const maxShortHashLength = 52

var shortHashEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

func hashSHA256(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:]), nil
}

func hashShort(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	n, err := a.optInt(1, DefaultShortHashLength)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > maxShortHashLength {
		return nil, a.argErrorf(1, "must be between 1 and %d, got %d", maxShortHashLength, n)
	}
	return shortHash(s, int(n)), nil
}

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return shortHashEncoding.EncodeToString(sum[:])[:n]
}
