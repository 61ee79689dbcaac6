package stdlib

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
)

// Log is the log module: structured lines to the engine's log (Env.Log), which tags them
// with the controller and the object. Nothing is written to stdout or stderr.
//
//	debug(msg, fields=null, **fields) -> null
//	info(msg, fields=null, **fields) -> null
//	warn(msg, fields=null, **fields) -> null
//	error(msg, fields=null, **fields) -> null
//
// msg is a string; fields, given as a dict (the JavaScript form, log.info("msg", {k: v})) or
// as keyword arguments (Starlark, log.info("msg", k=v)) or both, become attributes of the
// line in key order, keyword arguments last. Messages and string fields longer than 4 KiB
// are cut, a dict or list field whose JSON passes 16 KiB (or is not valid JSON) is replaced
// by a note, and at most 32 fields are kept. Lines beyond the invocation's rate limit (Env.Limiter) are dropped
// without error: logging never fails a hook that called it correctly.
var Log = &Module{
	Name: "log",
	Functions: map[string]Func{
		"debug": logFunc("log.debug", slog.LevelDebug),
		"info":  logFunc("log.info", slog.LevelInfo),
		"warn":  logFunc("log.warn", slog.LevelWarn),
		"error": logFunc("log.error", slog.LevelError),
	},
}

const (
	maxLogMessage = 4 << 10
	maxLogValue   = 16 << 10
	maxLogFields  = 32

	// DefaultLogBurst and DefaultLogRate configure the TokenBucket an Env gets when its
	// Limiter is nil: 20 lines at once, then 10 lines per second of the Env's clock.
	DefaultLogBurst = 20
	DefaultLogRate  = 10
)

func logFunc(fn string, level slog.Level) Func {
	sig := signature{fn: fn, names: []string{"msg", "fields"}, required: 1}
	signatures[fn] = &sig
	return func(env *Env, positional []any, kwargs []Kwarg) (any, error) {
		// Keywords other than msg and fields are fields; bind the rest as usual.
		var named, extra []Kwarg
		for _, kw := range kwargs {
			if kw.Name == "msg" || kw.Name == "fields" {
				named = append(named, kw)
			} else {
				extra = append(extra, kw)
			}
		}
		a, err := sig.bind(positional, named)
		if err != nil {
			return nil, err
		}
		msg, err := a.string(0)
		if err != nil {
			return nil, err
		}
		var fields map[string]any
		if a.has(1) {
			if fields, err = a.dict(1); err != nil {
				return nil, err
			}
		}
		if env == nil || env.Log == nil || !env.Log.Enabled(context.Background(), level) {
			return nil, nil
		}
		if env.Limiter == nil {
			env.Limiter = NewTokenBucket(DefaultLogBurst, DefaultLogRate, env.now)
		}
		if !env.Limiter.Allow() {
			return nil, nil
		}
		msg = truncateLogString(msg)
		attrs := make([]slog.Attr, 0, min(len(fields)+len(extra), maxLogFields))
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			attrs = append(attrs, logAttr(k, fields[k]))
		}
		for _, kw := range extra {
			attrs = append(attrs, logAttr(kw.Name, kw.Value))
		}
		if len(attrs) > maxLogFields {
			attrs = attrs[:maxLogFields]
		}
		env.Log.LogAttrs(context.Background(), level, msg, attrs...)
		return nil, nil
	}
}

func truncateLogString(s string) string {
	if len(s) <= maxLogMessage {
		return s
	}
	cut := maxLogMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// logAttr makes one field: strings are cut like messages, and a dict or list whose JSON
// passes maxLogValue bytes is replaced by a note, so one line stays small.
func logAttr(key string, v any) slog.Attr {
	switch x := v.(type) {
	case string:
		return slog.String(key, truncateLogString(x))
	case map[string]any, []any:
		if _, err := encodeJSON(v, maxLogValue, nil, "", ""); err != nil {
			return slog.String(key, fmt.Sprintf("(%s dropped: %v)", typeName(v), err))
		}
	}
	return slog.Any(key, v)
}

// TokenBucket is a LogLimiter that allows a burst of lines, then a steady rate, measured on
// the clock it is given. It is safe for concurrent use.
type TokenBucket struct {
	mu      sync.Mutex
	burst   float64
	rate    float64 // tokens per second
	now     func() time.Time
	tokens  float64
	last    time.Time
	dropped int64
}

// NewTokenBucket returns a full bucket of burst tokens refilled at rate tokens per second of
// now (time.Now when nil).
func NewTokenBucket(burst int, rate float64, now func() time.Time) *TokenBucket {
	if now == nil {
		now = time.Now
	}
	return &TokenBucket{burst: float64(burst), rate: rate, now: now, tokens: float64(burst), last: now()}
}

// Allow takes a token if one is left and reports whether it did.
func (b *TokenBucket) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	if elapsed := t.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = min(b.burst, b.tokens+elapsed*b.rate)
		b.last = t
	}
	if b.tokens < 1 {
		b.dropped++
		return false
	}
	b.tokens--
	return true
}

// Dropped returns how many lines Allow has refused, for the engine to report.
func (b *TokenBucket) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
