package stdlib

import (
	"math"
	"time"
)

// Time is the time module. A time crossing into a hook is a string: RFC 3339 in UTC with
// up to nine fractional digits and trailing zeros dropped, e.g. "2024-05-01T12:00:00Z" or
// "2024-05-01T12:00:00.25Z" (Go's time.RFC3339Nano). Every function taking a time accepts any
// RFC 3339 string, in any offset; every function returning one returns this canonical form,
// so equal instants are equal strings and canonical strings of one offset sort as text. A
// duration is a number of seconds (float); where noted, a Go duration string ("1h30m") is
// accepted too.
//
//	now() -> time                   the injected clock (Env.Now), never the host's when one is set
//	parse(text, layout="RFC3339") -> time
//	    Parses text with a Go reference layout or a layout name below; a text without an
//	    offset is taken as UTC.
//	format(time, layout="RFC3339") -> string
//	    Formats in UTC with a Go reference layout ("2006-01-02") or a name: RFC3339,
//	    RFC3339Nano, RFC1123, RFC1123Z, DateTime, DateOnly, TimeOnly, Kitchen.
//	unix(time) -> float             seconds since 1970-01-01T00:00:00Z
//	from_unix(seconds) -> time
//	parse_duration(text) -> float   "1h30m" -> 5400.0; units ns, us, ms, s, m, h
//	format_duration(seconds) -> string
//	    5400 -> "1h30m0s", as Go's time.Duration.String.
//	add(time, duration) -> time     duration in seconds or a duration string; may be negative
//	sub(a, b) -> float              a - b in seconds
//	since(time) -> float            now() - time in seconds
//	compare(a, b) -> int            -1, 0 or 1 as a is before, equal to or after b
//	before(a, b) -> bool
//	after(a, b) -> bool
//
// Constants: SECOND, MINUTE, HOUR and DAY in seconds. Durations are limited to about ±292
// years (Go's time.Duration); larger values are errors.
var Time = &Module{
	Name: "time",
	Functions: map[string]Func{
		"now":             define("time.now", nil, timeNow),
		"parse":           define("time.parse", []string{"text", "layout?"}, timeParse),
		"format":          define("time.format", []string{"time", "layout?"}, timeFormat),
		"unix":            define("time.unix", []string{"time"}, timeUnix),
		"from_unix":       define("time.from_unix", []string{"seconds"}, timeFromUnix),
		"parse_duration":  define("time.parse_duration", []string{"text"}, timeParseDuration),
		"format_duration": define("time.format_duration", []string{"seconds"}, timeFormatDuration),
		"add":             define("time.add", []string{"time", "duration"}, timeAdd),
		"sub":             define("time.sub", []string{"a", "b"}, timeSub),
		"since":           define("time.since", []string{"time"}, timeSince),
		"compare":         define("time.compare", []string{"a", "b"}, timeCompare),
		"before":          define("time.before", []string{"a", "b"}, timeBefore),
		"after":           define("time.after", []string{"a", "b"}, timeAfter),
	},
	Constants: map[string]any{
		"SECOND": 1.0,
		"MINUTE": 60.0,
		"HOUR":   3600.0,
		"DAY":    86400.0,
	},
}

var timeLayouts = map[string]string{
	"RFC3339":     time.RFC3339,
	"RFC3339Nano": time.RFC3339Nano,
	"RFC1123":     time.RFC1123,
	"RFC1123Z":    time.RFC1123Z,
	"DateTime":    time.DateTime,
	"DateOnly":    time.DateOnly,
	"TimeOnly":    time.TimeOnly,
	"Kitchen":     time.Kitchen,
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (a *args) time(i int) (time.Time, error) {
	s, err := a.string(i)
	if err != nil {
		return time.Time{}, a.typeError(i, "time (RFC 3339 string)")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, a.argErrorf(i, "invalid RFC 3339 time %s", quote(s))
	}
	return t, nil
}

// duration accepts seconds or, when strings are allowed, a Go duration string.
func (a *args) duration(i int, strings bool) (time.Duration, error) {
	if s, ok := a.value(i).(string); ok && strings {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, a.argErrorf(i, "invalid duration %s (want e.g. \"1h30m\" or seconds)", quote(s))
		}
		return d, nil
	}
	secs, err := a.number(i)
	if err != nil {
		if strings {
			return 0, a.typeError(i, "seconds or duration string")
		}
		return 0, err
	}
	return secondsToDuration(a, i, secs)
}

func secondsToDuration(a *args, i int, secs float64) (time.Duration, error) {
	ns := secs * float64(time.Second)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, a.argErrorf(i, "duration of %v seconds is out of range (about ±292 years)", secs)
	}
	return time.Duration(math.Round(ns)), nil
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func timeNow(env *Env, a *args) (any, error) { return formatTime(env.now()), nil }

func (a *args) layout(i int) (string, error) {
	layout, err := a.optString(i, "RFC3339")
	if err != nil {
		return "", err
	}
	if named, ok := timeLayouts[layout]; ok {
		return named, nil
	}
	return layout, nil
}

func timeParse(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	layout, err := a.layout(1)
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return nil, a.argErrorf(0, "%s", parseError(err))
	}
	return formatTime(t), nil
}

// parseError words a time.Parse error as Go does, quoting the text and the layout with
// quote: Go quotes them whole.
func parseError(err error) string {
	pe, ok := err.(*time.ParseError)
	if !ok {
		return err.Error()
	}
	if pe.Message != "" {
		return "parsing time " + quote(pe.Value) + pe.Message
	}
	return "parsing time " + quote(pe.Value) + " as " + quote(pe.Layout) + ": cannot parse " +
		quote(pe.ValueElem) + " as " + quote(pe.LayoutElem)
}

func timeFormat(env *Env, a *args) (any, error) {
	t, err := a.time(0)
	if err != nil {
		return nil, err
	}
	layout, err := a.layout(1)
	if err != nil {
		return nil, err
	}
	// No layout element formats to more than twice its own length.
	if err := a.reserve(env, int64(len(layout))*2); err != nil {
		return nil, err
	}
	return t.UTC().Format(layout), nil
}

func timeUnix(env *Env, a *args) (any, error) {
	t, err := a.time(0)
	if err != nil {
		return nil, err
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9, nil
}

func timeFromUnix(env *Env, a *args) (any, error) {
	secs, err := a.number(0)
	if err != nil {
		return nil, err
	}
	// Beyond year 9999 RFC 3339 has no spelling.
	if math.IsNaN(secs) || secs < -62135596800 || secs >= 253402300800 {
		return nil, a.argErrorf(0, "%v seconds is outside years 0001 to 9999", secs)
	}
	whole := math.Floor(secs)
	return formatTime(time.Unix(int64(whole), int64(math.Round((secs-whole)*1e9)))), nil
}

func timeParseDuration(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, a.argErrorf(0, "invalid duration %s (want e.g. \"1h30m\")", quote(s))
	}
	return seconds(d), nil
}

func timeFormatDuration(env *Env, a *args) (any, error) {
	d, err := a.duration(0, false)
	if err != nil {
		return nil, err
	}
	return d.String(), nil
}

func timeAdd(env *Env, a *args) (any, error) {
	t, err := a.time(0)
	if err != nil {
		return nil, err
	}
	d, err := a.duration(1, true)
	if err != nil {
		return nil, err
	}
	r := t.Add(d)
	if r.Year() < 1 || r.Year() > 9999 {
		return nil, a.errorf("result %v is outside years 0001 to 9999", r)
	}
	return formatTime(r), nil
}

func timeSub(env *Env, a *args) (any, error) {
	t, u, err := a.timePair()
	if err != nil {
		return nil, err
	}
	return subSeconds(t, u), nil
}

// subSeconds is t - u in seconds without time.Duration's ±292-year saturation.
func subSeconds(t, u time.Time) float64 {
	return float64(t.Unix()-u.Unix()) + float64(t.Nanosecond()-u.Nanosecond())/1e9
}

func timeSince(env *Env, a *args) (any, error) {
	t, err := a.time(0)
	if err != nil {
		return nil, err
	}
	return subSeconds(env.now(), t), nil
}

func (a *args) timePair() (time.Time, time.Time, error) {
	t, err := a.time(0)
	if err != nil {
		return t, t, err
	}
	u, err := a.time(1)
	return t, u, err
}

func timeCompare(env *Env, a *args) (any, error) {
	t, u, err := a.timePair()
	if err != nil {
		return nil, err
	}
	return int64(t.Compare(u)), nil
}

func timeBefore(env *Env, a *args) (any, error) {
	t, u, err := a.timePair()
	if err != nil {
		return nil, err
	}
	return t.Before(u), nil
}

func timeAfter(env *Env, a *args) (any, error) {
	t, u, err := a.timePair()
	if err != nil {
		return nil, err
	}
	return t.After(u), nil
}
