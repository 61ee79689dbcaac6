package protocol

import (
	"strings"
	"testing"
)

func TestParseCommonEvents(t *testing.T) {
	ev := func(fields ...string) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(fields); i += 2 {
			m[fields[i]] = fields[i+1]
		}
		return m
	}
	many := make([]any, MaxEvents+1)
	for i := range many {
		many[i] = ev("reason", "Many", "message", "m")
	}
	for _, c := range []struct {
		name    string
		events  any
		want    []Event
		wantErr string
	}{
		{"absent", nil, nil, ""},
		{"type defaults to Normal", []any{ev("reason", "Synced", "message", "ok")}, []Event{{"Normal", "Synced", "ok"}}, ""},
		{"warning", []any{ev("type", "Warning", "reason", "QuotaLow", "message", "raise it")}, []Event{{"Warning", "QuotaLow", "raise it"}}, ""},
		{"not a list", "Synced", nil, "events: expected a list, got string"},
		{"not an object", []any{"Synced"}, nil, "events[0]: expected an object"},
		{"unknown field", []any{ev("reason", "A", "message", "m", "note", "x")}, nil, "events[0].note: unknown field"},
		{"bad type", []any{ev("type", "Error", "reason", "A", "message", "m")}, nil, `events[0].type: "Error"; expected Normal or Warning`},
		{"lower-case reason", []any{ev("reason", "synced", "message", "m")}, nil, "events[0].reason"},
		{"reason with a space", []any{ev("reason", "Not Ok", "message", "m")}, nil, "events[0].reason"},
		{"no message", []any{ev("reason", "A")}, nil, "events[0].message: required"},
		{"long message", []any{ev("reason", "A", "message", strings.Repeat("x", MaxEventMessage+1))}, nil, "events[0].message: 1025 bytes"},
		{"too many", many, nil, "events: 11 events; a response may ask for at most 10"},
		{"reason not a string", []any{map[string]any{"reason": int64(1), "message": "m"}}, nil, "events[0].reason: expected a string"},
	} {
		resp := map[string]any{}
		if c.events != nil {
			resp["events"] = c.events
		}
		got, err := ParseCommon(resp, "events")
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(got.Events) != len(c.want) {
			t.Errorf("%s: events %v, want %v", c.name, got.Events, c.want)
			continue
		}
		for i := range c.want {
			if got.Events[i] != c.want[i] {
				t.Errorf("%s: events %v, want %v", c.name, got.Events, c.want)
			}
		}
	}
}
