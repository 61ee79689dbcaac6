package stdlib

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

var logCases = []callCase{
	{fn: "log.debug", args: []any{"d"}, want: nil},
	{fn: "log.debug", args: []any{int64(1)}, err: "log.debug: argument 1 (msg): expected string, got int"},
	{fn: "log.info", args: []any{"i", map[string]any{"k": "v"}}, kwargs: []Kwarg{{"n", int64(1)}}, want: nil},
	{fn: "log.info", args: []any{"i", "k=v"}, err: "argument 2 (fields): expected dict, got string"},
	{fn: "log.warn", kwargs: []Kwarg{{"msg", "w"}}, want: nil},
	{fn: "log.warn", kwargs: []Kwarg{{"k", "v"}}, err: "missing argument 1 (msg)"},
	{fn: "log.error", args: []any{"e", nil}, want: nil},
	{fn: "log.error", args: []any{"e", nil, nil}, err: "got 3 arguments, want at most 2"},
}

// logTo returns an Env logging JSON lines at debug level into buf.
func logTo(buf *bytes.Buffer, now func() time.Time) *Env {
	h := slog.NewJSONHandler(buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	return &Env{Now: now, Log: slog.New(h)}
}

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLogWritesStructuredLines(t *testing.T) {
	var buf bytes.Buffer
	env := logTo(&buf, func() time.Time { return testNow })
	calls := []struct {
		fn     string
		args   []any
		kwargs []Kwarg
	}{
		{"debug", []any{"starting"}, nil},
		{"info", []any{"synced", map[string]any{"children": int64(3), "b": "x"}}, []Kwarg{{"parent", "ns/a"}}},
		{"warn", []any{"slow"}, []Kwarg{{"ms", 12.5}}},
		{"error", []any{"failed", map[string]any{"obj": map[string]any{"k": []any{true}}}}, nil},
	}
	for _, c := range calls {
		if _, err := Log.Functions[c.fn](env, c.args, c.kwargs); err != nil {
			t.Fatal(err)
		}
	}
	got := lines(t, &buf)
	want := []string{
		`{"level":"DEBUG","msg":"starting"}`,
		`{"level":"INFO","msg":"synced","b":"x","children":3,"parent":"ns/a"}`,
		`{"level":"WARN","msg":"slow","ms":12.5}`,
		`{"level":"ERROR","msg":"failed","obj":{"k":[true]}}`,
	}
	raw := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(got), buf.String())
	}
	for i := range want {
		if raw[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, raw[i], want[i])
		}
	}
}

func TestLogCapsMessageAndFields(t *testing.T) {
	var buf bytes.Buffer
	env := logTo(&buf, nil)
	fields := map[string]any{}
	for i := range 100 {
		fields[strings.Repeat("k", i+1)] = int64(i)
	}
	msg := strings.Repeat("é", maxLogMessage) // 2 bytes per code point
	if _, err := Log.Functions["info"](env, []any{msg, fields}, nil); err != nil {
		t.Fatal(err)
	}
	l := lines(t, &buf)[0]
	gotMsg := l["msg"].(string)
	if len(gotMsg) > maxLogMessage+len("…") || !strings.HasSuffix(gotMsg, "é…") {
		t.Errorf("message not cut at a code point boundary to %d bytes: %d bytes, ends %q", maxLogMessage, len(gotMsg), gotMsg[len(gotMsg)-8:])
	}
	if n := len(l) - 2; n != maxLogFields {
		t.Errorf("got %d fields, want %d", n, maxLogFields)
	}

	buf.Reset()
	big := make([]any, 10000)
	for i := range big {
		big[i] = "xxxx"
	}
	kwargs := []Kwarg{{"big", big}, {"long", strings.Repeat("y", 2*maxLogMessage)}, {"small", []any{int64(1)}}}
	if _, err := Log.Functions["info"](env, []any{"m"}, kwargs); err != nil {
		t.Fatal(err)
	}
	l = lines(t, &buf)[0]
	if s, _ := l["big"].(string); !strings.HasPrefix(s, "(list dropped: result too large") {
		t.Errorf("big list field logged as %.80v", l["big"])
	}
	if s, _ := l["long"].(string); len(s) != maxLogMessage+len("…") {
		t.Errorf("long string field logged with %d bytes", len(s))
	}
	if !reflect.DeepEqual(l["small"], []any{1.0}) {
		t.Errorf("small list field logged as %v", l["small"])
	}
}

// TestLogIsRateLimitedPerEnv: an Env without a Limiter gets its own default bucket; a burst
// passes, the rest is dropped without error until the Env's clock refills the bucket; a
// second Env starts full.
func TestLogIsRateLimitedPerEnv(t *testing.T) {
	var buf bytes.Buffer
	now := testNow
	env := logTo(&buf, func() time.Time { return now })
	for range DefaultLogBurst + 5 {
		if _, err := Log.Functions["info"](env, []any{"x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(lines(t, &buf)); n != DefaultLogBurst {
		t.Fatalf("wrote %d lines, want the burst of %d", n, DefaultLogBurst)
	}
	if d := env.Limiter.(*TokenBucket).Dropped(); d != 5 {
		t.Errorf("Dropped() = %d, want 5", d)
	}
	now = now.Add(time.Second) // refills DefaultLogRate tokens
	buf.Reset()
	for range DefaultLogBurst {
		Log.Functions["info"](env, []any{"x"}, nil)
	}
	if n := len(lines(t, &buf)); n != DefaultLogRate {
		t.Fatalf("after one second wrote %d lines, want %d", n, DefaultLogRate)
	}
	buf.Reset()
	other := logTo(&buf, func() time.Time { return now })
	Log.Functions["info"](other, []any{"x"}, nil)
	if n := len(lines(t, &buf)); n != 1 {
		t.Fatalf("a new Env wrote %d lines, want 1", n)
	}
}

type denyAll struct{}

func (denyAll) Allow() bool { return false }

func TestLogUsesGivenLimiterAndDisabledLevels(t *testing.T) {
	var buf bytes.Buffer
	env := logTo(&buf, nil)
	env.Limiter = denyAll{}
	Log.Functions["error"](env, []any{"x"}, nil)
	if buf.Len() != 0 {
		t.Fatalf("a denying limiter let a line through: %s", buf.String())
	}
	// A level the logger does not record takes no token.
	bucket := NewTokenBucket(1, 0, nil)
	env = &Env{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Limiter: bucket}
	Log.Functions["debug"](env, []any{"x"}, nil)
	Log.Functions["info"](env, []any{"y"}, nil)
	if got := lines(t, &buf); len(got) != 1 || got[0]["msg"] != "y" {
		t.Fatalf("got %v", got)
	}
	// No logger: nothing to write, arguments still checked.
	if _, err := Log.Functions["info"](&Env{}, []any{"x"}, nil); err != nil {
		t.Fatal(err)
	}
}
