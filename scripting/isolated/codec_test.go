package isolated

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"metascript.dev/metascript/scripting"
)

// TestValueRoundTrip: every JSON-shape value comes back equal and of the same Go type (an
// int64 stays an int64, 5.0 stays a float64).
func TestValueRoundTrip(t *testing.T) {
	for _, v := range []any{
		nil, true, false, int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 5.0, math.Inf(-1), "", "ünïcode\x00",
		[]any{}, map[string]any{}, []any{int64(1), 1.0, "1", nil, []any{map[string]any{"": false}}},
		map[string]any{"a": map[string]any{"b": []any{int64(2)}}, "c": 0.5},
	} {
		var e encoder
		if err := e.value(v); err != nil {
			t.Fatal(err)
		}
		d := decoder{b: e.b}
		got := d.value(0)
		if d.err != nil || len(d.b) != 0 || !reflect.DeepEqual(got, v) {
			t.Errorf("%#v came back as %#v (err %v, %d bytes left)", v, got, d.err, len(d.b))
		}
	}
	var e encoder
	if err := e.value(map[string]any{"x": struct{}{}}); err == nil {
		t.Error("a struct was encoded")
	}
}

// TestErrorRoundTrip: the scripting package's typed errors cross typed and equal.
func TestErrorRoundTrip(t *testing.T) {
	stack := []scripting.Frame{{Function: "sync", File: "f.star", Line: 3, Column: 9}}
	for _, err := range []error{
		nil,
		&scripting.CompileError{Language: scripting.Starlark, File: "f", Line: 1, Column: 2, Msg: "m"},
		&scripting.RuntimeError{Language: scripting.JavaScript, Msg: "m", Thrown: map[string]any{"code": int64(1)}, Stack: stack},
		&scripting.BudgetError{Language: scripting.Starlark, Budget: scripting.BudgetSteps, Limit: 1, Used: 2, Unit: "steps", Stack: stack},
		&scripting.OutputError{Language: scripting.Starlark, Path: "children[0]", Msg: "m"},
		errors.New("other"),
	} {
		var e encoder
		e.error(err)
		d := decoder{b: e.b}
		if got := d.error(); d.err != nil || !reflect.DeepEqual(got, err) {
			t.Errorf("%#v came back as %#v (%v)", err, got, d.err)
		}
	}
}

// TestTruncatedFramesFail: every prefix of a valid call frame fails to decode, without a
// panic or an allocation larger than the frame.
func TestTruncatedFramesFail(t *testing.T) {
	req := &callRequest{Seq: 7, Lang: scripting.Starlark, Name: "n", Source: "def sync(r): pass", Function: "sync",
		Request: map[string]any{"parent": map[string]any{"spec": []any{int64(1), 2.5, "x"}}}, Log: true}
	body, err := req.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeCall(body)
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("round trip: %#v, %v", got, err)
	}
	for n := range len(body) - 1 {
		if _, err := decodeCall(body[:n]); err == nil {
			t.Errorf("a frame cut at %d of %d bytes decoded", n, len(body))
		}
	}
	// A list claiming more items than the frame holds is refused before it is allocated.
	huge := []byte{tagList, 0xff, 0xff, 0xff, 0xff, 0x0f}
	d := decoder{b: huge}
	if d.value(0); d.err == nil {
		t.Error("a list of 4G items in 6 bytes decoded")
	}
}
