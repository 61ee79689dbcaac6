package stdlib

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// signature describes the parameters of one module function. Parameters are matched
// positionally first, then by keyword, so every parameter can be passed either way: a
// JavaScript hook, which has no keyword arguments, passes optional ones by position.
type signature struct {
	// fn is the qualified name used in errors, e.g. "k8s.match_selector".
	fn       string
	names    []string
	required int
}

// signatures are the parameter lists of every module function, by qualified name. Only
// package variables' initializers write it (through define and logFunc), so reading it
// afterwards needs no lock.
var signatures = map[string]*signature{}

// Param is one parameter of a module function.
type Param struct {
	Name string
	// Optional parameters follow the required ones; left out or null, they take their default.
	Optional bool
}

// Params returns the parameters of module function fn, named as qualified ("k8s.name"), in
// order; false when no module has fn. Starlark's extra keyword arguments of the log
// functions (**fields) are not parameters.
func Params(fn string) ([]Param, bool) {
	sig, ok := signatures[fn]
	if !ok {
		return nil, false
	}
	out := make([]Param, len(sig.names))
	for i, n := range sig.names {
		out[i] = Param{Name: n, Optional: i >= sig.required}
	}
	return out, true
}

// define builds a Func from a parameter list and a body. A parameter written "name?" is
// optional; optional parameters follow the required ones. The body receives the bound
// arguments; it runs only when the arity and keywords are right.
func define(fn string, params []string, body func(env *Env, a *args) (any, error)) Func {
	sig := signature{fn: fn}
	for _, p := range params {
		if name, ok := strings.CutSuffix(p, "?"); ok {
			sig.names = append(sig.names, name)
			continue
		}
		if len(sig.names) != sig.required {
			panic("stdlib: required parameter " + p + " of " + fn + " follows an optional one")
		}
		sig.names = append(sig.names, p)
		sig.required++
	}
	signatures[fn] = &sig
	return func(env *Env, positional []any, kwargs []Kwarg) (any, error) {
		a, err := sig.bind(positional, kwargs)
		if err != nil {
			return nil, err
		}
		if env == nil {
			env = &Env{}
		}
		return body(env, a)
	}
}

// args holds the arguments of one call, bound to their parameters.
type args struct {
	sig  *signature
	vals []any
	set  []bool
}

func (s *signature) bind(positional []any, kwargs []Kwarg) (*args, error) {
	if len(positional) > len(s.names) {
		return nil, fmt.Errorf("%s: got %d arguments, want at most %d", s.fn, len(positional), len(s.names))
	}
	a := &args{sig: s, vals: make([]any, len(s.names)), set: make([]bool, len(s.names))}
	for i, v := range positional {
		a.vals[i], a.set[i] = v, true
	}
	for _, kw := range kwargs {
		i := s.index(kw.Name)
		if i < 0 {
			return nil, fmt.Errorf("%s: unexpected keyword argument %s", s.fn, quote(kw.Name))
		}
		if a.set[i] {
			return nil, fmt.Errorf("%s: argument %s given twice", s.fn, quote(kw.Name))
		}
		a.vals[i], a.set[i] = kw.Value, true
	}
	for i := 0; i < s.required; i++ {
		if !a.set[i] {
			return nil, fmt.Errorf("%s: missing argument %d (%s)", s.fn, i+1, s.names[i])
		}
	}
	return a, nil
}

func (s *signature) index(name string) int {
	for i, n := range s.names {
		if n == name {
			return i
		}
	}
	return -1
}

// has reports whether optional parameter i was given a non-null value: null (None,
// undefined) stands for "use the default".
func (a *args) has(i int) bool { return a.set[i] && a.vals[i] != nil }

// value returns argument i as given.
func (a *args) value(i int) any { return a.vals[i] }

// errorf reports an error of the call as a whole: "fn: msg". format may use %w.
func (a *args) errorf(format string, v ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{a.sig.fn}, v...)...)
}

// argErrorf reports an error about argument i: "fn: argument 2 (labels): msg". format may
// use %w.
func (a *args) argErrorf(i int, format string, v ...any) error {
	return fmt.Errorf("%s: argument %d (%s): "+format, append([]any{a.sig.fn, i + 1, a.sig.names[i]}, v...)...)
}

// reserve is called before a result of n bytes is built: it fails when n passes
// Env.MaxBytes or when Env.Reserve refuses, wrapping the refusal so errors.As finds it.
func (a *args) reserve(env *Env, n int64) error {
	if limit := env.maxBytes(); n > limit {
		return a.errorf("%w", tooLarge(limit))
	}
	if env.Reserve != nil {
		if err := env.Reserve(n); err != nil {
			return a.errorf("%w", err)
		}
	}
	return nil
}

// perPiece is what one string of a list result costs by the time the hook holds it: its
// header in the Go slice that finds it, the slot and boxed header of the JSON-shaped list,
// and as much again in the language's own list.
const perPiece = 96

// reservePieces is reserve for a list of n strings that share the characters of an argument.
func (a *args) reservePieces(env *Env, n int64) error {
	if n > env.maxBytes()/perPiece {
		return a.errorf("%w", tooManyPieces(env.maxBytes()/perPiece))
	}
	return a.reserve(env, n*perPiece)
}

func tooManyPieces(limit int64) error {
	return fmt.Errorf("%w: more than %d pieces (Env.MaxBytes)", errTooLarge, limit)
}

func (a *args) typeError(i int, want string) error {
	return a.argErrorf(i, "expected %s, got %s", want, typeName(a.vals[i]))
}

func (a *args) string(i int) (string, error) {
	s, ok := a.vals[i].(string)
	if !ok {
		return "", a.typeError(i, "string")
	}
	return s, nil
}

func (a *args) optString(i int, def string) (string, error) {
	if !a.has(i) {
		return def, nil
	}
	return a.string(i)
}

func (a *args) bool(i int) (bool, error) {
	b, ok := a.vals[i].(bool)
	if !ok {
		return false, a.typeError(i, "bool")
	}
	return b, nil
}

func (a *args) optBool(i int, def bool) (bool, error) {
	if !a.has(i) {
		return def, nil
	}
	return a.bool(i)
}

// int accepts integers and integral floats, since JavaScript numbers may reach Go as either.
func (a *args) int(i int) (int64, error) {
	n, ok := asInt(a.vals[i])
	if !ok {
		return 0, a.typeError(i, "int")
	}
	return n, nil
}

func (a *args) optInt(i int, def int64) (int64, error) {
	if !a.has(i) {
		return def, nil
	}
	return a.int(i)
}

func (a *args) number(i int) (float64, error) {
	switch v := a.vals[i].(type) {
	case int64:
		return float64(v), nil
	case int:
		return float64(v), nil
	case float64:
		return v, nil
	}
	return 0, a.typeError(i, "number")
}

func (a *args) dict(i int) (map[string]any, error) {
	m, ok := a.vals[i].(map[string]any)
	if !ok {
		return nil, a.typeError(i, "dict")
	}
	return m, nil
}

func (a *args) list(i int) ([]any, error) {
	l, ok := a.vals[i].([]any)
	if !ok {
		return nil, a.typeError(i, "list")
	}
	return l, nil
}

// stringList returns a list argument whose elements must all be strings.
func (a *args) stringList(i int) ([]string, error) {
	l, err := a.list(i)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l))
	for j, v := range l {
		s, ok := v.(string)
		if !ok {
			return nil, a.argErrorf(i, "element %d: expected string, got %s", j, typeName(v))
		}
		out[j] = s
	}
	return out, nil
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
			return int64(n), true
		}
	}
	return 0, false
}

// maxQuoted is how much of a hook's text an error message quotes.
const maxQuoted = 64

// quote quotes s for an error message, cut after maxQuoted bytes with its length noted: the
// text comes from the hook, and quoting megabytes of it, escaped up to four bytes per byte,
// made one failing call allocate many times its budget.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// typeName names the JSON-shaped type of v the way error messages do in both languages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "dict"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64, int:
		return "int"
	case float64:
		return "float"
	}
	return fmt.Sprintf("unsupported Go type %T", v)
}
