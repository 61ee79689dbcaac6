// Package stdlib defines the modules offered to hooks — json, yaml, base64, hash, time,
// strings, re, k8s, log — once, in Go, over JSON-shaped values. The scripting adapters expose
// every module to both languages with the same names and semantics: a hook reaches a module as
// a predeclared global, through load("name", "name") in Starlark, or require("name") in
// JavaScript. Nothing else reaches the outside world.
//
// Conventions shared by every module (REFERENCE.md, generated from these doc comments, is the
// page for hook authors):
//
//   - Arguments may be passed by position or, in Starlark, by keyword, using the parameter
//     names shown. JavaScript has no keyword arguments: pass optional ones by position. An
//     optional argument given as null (None, undefined) takes its default.
//   - Values are JSON-shaped: dict, list, string, bool, int, float, null. A number that is
//     integral and fits in 64 bits is an int wherever a function produces one from text
//     (json.decode, yaml.decode), so both languages see the same value.
//   - No function mutates its arguments or returns a value sharing memory with them.
//   - Errors name the function and the argument, and say what was expected:
//     `k8s.match_selector: argument 1 (selector): expected dict or string, got int`.
//   - A call that would build a string or encoding larger than Env.MaxBytes, or that the
//     invocation's memory budget refuses (Env.Reserve), fails before building it.
//   - Times are RFC 3339 strings and durations are seconds (see the time module).
package stdlib

import (
	"log/slog"
	"time"
)

// Env is what one invocation hands its stdlib calls: the only clock and the only log a hook
// can reach. It is per call, never shared between invocations, and used by one goroutine at
// a time (the one running the hook).
type Env struct {
	// Now is the injected clock. Nil means time.Now.
	Now func() time.Time
	// Log receives log module output, already tagged with controller and object. Nil discards.
	Log *slog.Logger
	// Limiter rate-limits log output of this invocation. Nil means a new TokenBucket with
	// DefaultLogBurst and DefaultLogRate, created by the first log call and stored here, so
	// that the limit holds per invocation.
	Limiter LogLimiter
	// MaxBytes caps the size of any one string or encoding a stdlib call builds (json.indent,
	// strings.join, re.replace, ...), checked before or while it is built, so that an
	// amplifying call fails instead of allocating without bound. Zero means DefaultMaxBytes.
	// Adapters set it from the invocation's memory budget.
	MaxBytes int64
	// Reserve, when set, is asked before a stdlib call builds a string or encoding of n
	// bytes; the adapter passes its memory budget's pre-allocation check. A refusal
	// (typically a *scripting.BudgetError) is returned wrapped, so errors.As finds it.
	Reserve func(n int64) error
}

// DefaultMaxBytes is the Env.MaxBytes used when it is zero.
const DefaultMaxBytes = 8 << 20

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Env) maxBytes() int64 {
	if e.MaxBytes > 0 {
		return e.MaxBytes
	}
	return DefaultMaxBytes
}

// LogLimiter decides whether one more log line may be written.
type LogLimiter interface{ Allow() bool }

// Kwarg is one keyword argument, in call order.
type Kwarg struct {
	Name  string
	Value any
}

// Func is one module function. args and kwargs hold JSON-shaped values (map[string]any,
// []any, string, bool, int64, float64, nil) converted by the calling adapter; the function
// must not retain or mutate them. It returns a JSON-shaped value that shares no map or slice
// with its arguments, or an error whose message the adapter reports as a runtime error at the
// calling line. The message is complete as is: it starts with the qualified function name
// and names the argument, e.g. `k8s.match_selector: argument 1 (selector): expected dict,
// got string`; adapters should not prefix the name again.
type Func func(env *Env, args []any, kwargs []Kwarg) (any, error)

// Module is a named set of functions and constants.
type Module struct {
	Name      string
	Functions map[string]Func
	Constants map[string]any
}
