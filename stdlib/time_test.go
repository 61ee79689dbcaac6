package stdlib

import (
	"testing"
	"time"
)

var timeCases = []callCase{
	{fn: "time.now", want: "2024-05-01T12:00:00Z"},
	{fn: "time.now", args: []any{"x"}, err: "got 1 arguments, want at most 0"},

	{fn: "time.parse", args: []any{"2024-05-01T14:30:00.250+02:00"}, want: "2024-05-01T12:30:00.25Z"},
	{fn: "time.parse", args: []any{"2024-05-01", "DateOnly"}, want: "2024-05-01T00:00:00Z"},
	{fn: "time.parse", args: []any{"01/05/2024 13:04", "02/01/2006 15:04"}, want: "2024-05-01T13:04:00Z"},
	{fn: "time.parse", args: []any{"yesterday"}, err: `argument 1 (text): parsing time "yesterday"`},
	{fn: "time.parse", args: []any{int64(5)}, err: "argument 1 (text): expected string, got int"},

	{fn: "time.format", args: []any{"2024-05-01T12:30:00.25Z"}, want: "2024-05-01T12:30:00Z"},
	{fn: "time.format", args: []any{"2024-05-01T14:30:00+02:00", "RFC3339Nano"}, want: "2024-05-01T12:30:00Z"},
	{fn: "time.format", args: []any{"2024-05-01T12:30:00Z", "2006/01/02 Mon"}, want: "2024/05/01 Wed"},
	{fn: "time.format", args: []any{"2024-05-01T12:30:00Z", "Kitchen"}, want: "12:30PM"},
	{fn: "time.format", args: []any{"May 1"}, err: `argument 1 (time): invalid RFC 3339 time "May 1"`},
	{fn: "time.format", args: []any{int64(0)}, err: "argument 1 (time): expected time (RFC 3339 string), got int"},

	{fn: "time.unix", args: []any{"1970-01-01T00:01:40.5Z"}, want: 100.5},
	{fn: "time.unix", args: []any{"1969-12-31T23:59:59Z"}, want: -1.0},
	{fn: "time.unix", args: []any{"nope"}, err: "invalid RFC 3339 time"},
	{fn: "time.from_unix", args: []any{int64(100)}, want: "1970-01-01T00:01:40Z"},
	{fn: "time.from_unix", args: []any{1714564800.5}, want: "2024-05-01T12:00:00.5Z"},
	{fn: "time.from_unix", args: []any{-0.5}, want: "1969-12-31T23:59:59.5Z"},
	{fn: "time.from_unix", args: []any{1e12}, err: "outside years 0001 to 9999"},
	{fn: "time.from_unix", args: []any{"100"}, err: "argument 1 (seconds): expected number, got string"},

	{fn: "time.parse_duration", args: []any{"1h30m"}, want: 5400.0},
	{fn: "time.parse_duration", args: []any{"-1.5s"}, want: -1.5},
	{fn: "time.parse_duration", args: []any{"90"}, err: `argument 1 (text): invalid duration "90"`},
	{fn: "time.parse_duration", args: []any{90.0}, err: "expected string, got float"},
	{fn: "time.format_duration", args: []any{int64(5400)}, want: "1h30m0s"},
	{fn: "time.format_duration", args: []any{0.25}, want: "250ms"},
	{fn: "time.format_duration", args: []any{1e12}, err: "argument 1 (seconds): duration of 1e+12 seconds is out of range"},
	{fn: "time.format_duration", args: []any{"1h"}, err: "expected number, got string"},

	{fn: "time.add", args: []any{"2024-05-01T12:00:00Z", int64(90)}, want: "2024-05-01T12:01:30Z"},
	{fn: "time.add", args: []any{"2024-05-01T12:00:00Z", "-36h"}, want: "2024-04-30T00:00:00Z"},
	{fn: "time.add", args: []any{"2024-05-01T12:00:00Z", 0.001}, want: "2024-05-01T12:00:00.001Z"},
	{fn: "time.add", args: []any{"9999-12-31T23:59:59Z", int64(1)}, err: "outside years 0001 to 9999"},
	{fn: "time.add", args: []any{"2024-05-01T12:00:00Z", "soon"}, err: `argument 2 (duration): invalid duration "soon"`},
	{fn: "time.add", args: []any{"2024-05-01T12:00:00Z", true}, err: "argument 2 (duration): expected seconds or duration string, got bool"},

	{fn: "time.sub", args: []any{"2024-05-01T12:00:00Z", "2024-05-01T10:29:59.5Z"}, want: 5400.5},
	{fn: "time.sub", args: []any{"0001-01-01T00:00:00Z", "9999-01-01T00:00:00Z"}, want: -315506361600.0},
	{fn: "time.sub", args: []any{"2024-05-01T12:00:00Z"}, err: "missing argument 2 (b)"},
	{fn: "time.since", args: []any{"2024-05-01T11:00:00Z"}, want: 3600.0},
	{fn: "time.since", args: []any{nil}, err: "argument 1 (time): expected time (RFC 3339 string), got null"},

	{fn: "time.compare", args: []any{"2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00"}, want: int64(0)},
	{fn: "time.compare", args: []any{"2024-05-01T12:00:00Z", "2024-05-01T12:00:01Z"}, want: int64(-1)},
	{fn: "time.compare", args: []any{"2024-05-01T12:00:01Z", "2024-05-01T12:00:00Z"}, want: int64(1)},
	{fn: "time.compare", args: []any{"2024-05-01T12:00:00Z", "x"}, err: `argument 2 (b): invalid RFC 3339 time "x"`},
	{fn: "time.before", args: []any{"2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000000001Z"}, want: true},
	{fn: "time.before", args: []any{"2024-05-01T12:00:00Z", "2024-05-01T12:00:00Z"}, want: false},
	{fn: "time.before", args: []any{int64(1), int64(2)}, err: "argument 1 (a): expected time"},
	{fn: "time.after", args: []any{"2024-05-02T00:00:00Z", "2024-05-01T23:00:00+02:00"}, want: true},
	{fn: "time.after", args: []any{"2024-05-01T12:00:00Z", []any{}}, err: "argument 2 (b): expected time (RFC 3339 string), got list"},
}

// TestNowUsesInjectedClockOnly checks that time.now and time.since read Env.Now and nothing
// else: two Envs with different clocks answer differently at the same instant.
func TestNowUsesInjectedClockOnly(t *testing.T) {
	past := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	env := &Env{Now: func() time.Time { return past }}
	got, err := Time.Functions["now"](env, nil, nil)
	if err != nil || got != "2001-02-03T04:05:06.000000007Z" {
		t.Fatalf("now() = %v, %v", got, err)
	}
	got, err = Time.Functions["since"](env, []any{"2001-02-03T04:05:05.000000007Z"}, nil)
	if err != nil || got != 1.0 {
		t.Fatalf("since() = %v, %v", got, err)
	}
}

// TestCanonicalTimesRoundTrip: what one function returns, every other accepts, unchanged.
func TestCanonicalTimesRoundTrip(t *testing.T) {
	for _, s := range []string{"2024-05-01T12:00:00Z", "2024-05-01T12:00:00.123456789Z", "0001-01-01T00:00:00Z"} {
		got, err := Time.Functions["parse"](nil, []any{s}, nil)
		if err != nil || got != s {
			t.Errorf("parse(%q) = %v, %v", s, got, err)
		}
		got, err = Time.Functions["add"](nil, []any{s, int64(0)}, nil)
		if err != nil || got != s {
			t.Errorf("add(%q, 0) = %v, %v", s, got, err)
		}
	}
}
