package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecorderBounds(t *testing.T) {
	r := New()
	for i := range PerController + 5 {
		s := r.Begin("compositecontroller/a", fmt.Sprintf("ns/p%d", i%3), "parent")
		s.Call("sync", "", "starlark", 0, Used{}, map[string]any{"i": i}, nil)
		s.End(nil)
	}
	got := r.Records(Query{Controller: "compositecontroller/a"})
	if len(got) != PerController || got[0].Seq != 6 {
		t.Fatalf("kept %d records from seq %d, want %d from 6", len(got), got[0].Seq, PerController)
	}
	if all := r.Records(Query{}); len(all) != PerController {
		t.Fatalf("all controllers: %d records, want the %d kept", len(all), PerController)
	}
	if p := r.Records(Query{Controller: "compositecontroller/a", Parent: "ns/p1", Limit: 2}); len(p) != 2 || p[1].Parent != "ns/p1" {
		t.Fatalf("one parent, last two: %v", p)
	}
	// Across controllers, the oldest go first.
	for i := range Total {
		r.Begin(fmt.Sprintf("compositecontroller/c%d", i%100), "ns/x", "resync").End(nil)
	}
	if n := len(r.Records(Query{})); n != Total {
		t.Fatalf("%d records kept in all, want %d", n, Total)
	}
	if a := r.Records(Query{Controller: "compositecontroller/a"}); len(a) != 0 {
		t.Fatalf("%d records of a controller pushed out still kept", len(a))
	}
}

func TestSpanAnswersAndErrors(t *testing.T) {
	r := New()
	s := r.Begin("c", "ns/p", "child")
	s.Call("sync", "", "javascript", 0, Used{}, map[string]any{"big": strings.Repeat("x", MaxAnswer)}, nil)
	s.Call("map", "input ns/i", "starlark", 0, Used{}, nil, errors.New("boom"))
	s.Write("create", "ConfigMap ns/a", nil)
	s.Write("update", "ConfigMap ns/b", errors.New("conflict"))
	s.End(errors.New("1 write failed"))
	rec := r.Records(Query{})[0]
	if !rec.Calls[0].Cut || len(rec.Calls[0].Answer) > MaxAnswer+64 || rec.Calls[1].Error != "boom" || rec.Calls[1].About != "input ns/i" {
		t.Fatalf("calls %+v", rec.Calls)
	}
	if rec.Writes[1].Error != "conflict" || rec.Error != "1 write failed" || rec.Trigger != "child" {
		t.Fatalf("record %+v", rec)
	}
	var nilRec *Recorder
	nilRec.Begin("c", "p", "t").Call("sync", "", "starlark", 0, Used{}, nil, nil) // records nothing, no panic
}

func TestHandler(t *testing.T) {
	r := New()
	r.Begin("c", "ns/p", "parent").End(nil)
	r.Begin("d", "ns/q", "parent").End(nil)
	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, httptest.NewRequest("GET", Path+"?controller=d", nil))
	var got []Reconcile
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1 || got[0].Parent != "ns/q" {
		t.Fatalf("got %v, %v", got, err)
	}
	w = httptest.NewRecorder()
	r.Handler().ServeHTTP(w, httptest.NewRequest("GET", Path+"?limit=x", nil))
	if w.Code != 400 {
		t.Fatalf("a bad limit answered %d", w.Code)
	}
}
