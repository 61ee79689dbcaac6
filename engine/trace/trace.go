// Package trace keeps a bounded record of the engine's recent reconciles, per controller:
// what triggered each, the hook calls it made (duration, outcome, the answer), and the writes
// that followed with their results. `metascript trace` reads it from the engine's loopback
// debug endpoint (Handler), so that an author sees what a controller did without a debugger
// or a log search.
//
// The record is bounded twice: each controller keeps its last PerController reconciles, and
// the engine its last Total across controllers; answers are cut at MaxAnswer bytes. Older
// records are dropped first.
package trace

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"metascript.dev/metascript/engine/wire"
)

// Bounds of the record.
const (
	PerController = 50
	Total         = 2000
	MaxAnswer     = 4096
)

// Reconcile is one reconcile of one parent.
type Reconcile struct {
	Controller string        `json:"controller"`
	Parent     string        `json:"parent"` // namespace/name, or name
	Trigger    string        `json:"trigger,omitempty"`
	Start      time.Time     `json:"start"`
	Duration   time.Duration `json:"duration"`
	Calls      []Call        `json:"calls,omitempty"`
	Writes     []Write       `json:"writes,omitempty"`
	Error      string        `json:"error,omitempty"`
	// Seq orders the record: higher is later.
	Seq uint64 `json:"seq"`
}

// Call is one hook call.
type Call struct {
	Hook     string        `json:"hook"`
	About    string        `json:"about,omitempty"` // what a call standing alone was for (a map call's input)
	Form     string        `json:"form"`            // starlark, javascript, webhook
	Duration time.Duration `json:"duration"`
	// Used is what an inline hook used of its budget; zero for a webhook.
	Used Used `json:"used,omitzero"`
	// Answer is the hook's answer as JSON, cut at MaxAnswer bytes (Cut says so).
	Answer json.RawMessage `json:"answer,omitempty"`
	Cut    bool            `json:"cut,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Used is what a call used of its budget: its run time of the timeout, and for Starlark its
// steps of maxSteps.
type Used struct {
	Timeout  time.Duration `json:"timeout,omitempty"`
	Steps    uint64        `json:"steps,omitempty"`
	MaxSteps uint64        `json:"maxSteps,omitempty"`
}

// Write is one write the reconcile made.
type Write struct {
	Operation string `json:"operation"` // create, update, delete, adopt, release, status, finalizer
	Object    string `json:"object"`    // Kind namespace/name
	Error     string `json:"error,omitempty"`
}

// Recorder keeps the record. A nil *Recorder records nothing. Its methods are safe for
// concurrent use.
type Recorder struct {
	mu    sync.Mutex
	seq   uint64
	byCtl map[string][]*Reconcile // oldest first
	all   []*Reconcile            // oldest first, across controllers
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{byCtl: map[string][]*Reconcile{}} }

// Begin starts the record of a reconcile of parent by controller; its Span collects the
// calls and writes and End files it.
func (r *Recorder) Begin(controller, parent, trigger string) *Span {
	if r == nil {
		return nil
	}
	return &Span{r: r, rec: &Reconcile{Controller: controller, Parent: parent, Trigger: trigger, Start: time.Now()}}
}

// Span is the record of one reconcile in progress. A nil *Span records nothing. Its methods
// are safe for concurrent use (a parent's calls may run in parallel).
type Span struct {
	r   *Recorder
	mu  sync.Mutex
	rec *Reconcile
}

// Call records a hook call that answered answer (nil when it failed with err), and what it
// used of its budget.
func (s *Span) Call(hook, about, form string, took time.Duration, used Used, answer map[string]any, err error) {
	if s == nil {
		return
	}
	c := Call{Hook: hook, About: about, Form: form, Duration: took, Used: used}
	if err != nil {
		c.Error = err.Error()
	} else if answer != nil {
		// Every reconcile records its answers, and few are ever read: encoding/json's
		// reflection made this an eighth of a no-op resync's CPU.
		raw, merr := wire.Encode(nil, answer)
		if merr != nil {
			c.Error = "answer not JSON: " + merr.Error()
		} else if len(raw) > MaxAnswer {
			cut, _ := json.Marshal(string(raw[:MaxAnswer]))
			c.Answer, c.Cut = cut, true
		} else {
			c.Answer = raw
		}
	}
	s.mu.Lock()
	s.rec.Calls = append(s.rec.Calls, c)
	s.mu.Unlock()
}

// Write records a write and its result.
func (s *Span) Write(operation, object string, err error) {
	if s == nil {
		return
	}
	w := Write{Operation: operation, Object: object}
	if err != nil {
		w.Error = err.Error()
	}
	s.mu.Lock()
	s.rec.Writes = append(s.rec.Writes, w)
	s.mu.Unlock()
}

// End files the record with the reconcile's outcome.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	rec := s.rec
	rec.Duration = time.Since(rec.Start)
	if err != nil {
		rec.Error = err.Error()
	}
	s.mu.Unlock()
	s.r.file(rec)
}

func (r *Recorder) file(rec *Reconcile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec.Seq = r.seq
	list := append(r.byCtl[rec.Controller], rec)
	if len(list) > PerController {
		list = list[1:] // its oldest stays in all until dropped there; Records skips it
	}
	r.byCtl[rec.Controller] = list
	r.all = append(r.all, rec)
	if len(r.all) > Total {
		old := r.all[0]
		r.all = r.all[1:]
		if l := r.byCtl[old.Controller]; len(l) > 0 && l[0] == old {
			if r.byCtl[old.Controller] = l[1:]; len(l) == 1 {
				delete(r.byCtl, old.Controller)
			}
		}
	}
}

// Query selects records: of one controller (all when empty), of one parent (all when
// empty), the last Limit of them (all kept when 0).
type Query struct {
	Controller, Parent string
	Limit              int
}

// Records returns the records q selects, oldest first. They must not be modified.
func (r *Recorder) Records(q Query) []*Reconcile {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var src []*Reconcile
	if q.Controller != "" {
		src = r.byCtl[q.Controller]
	} else {
		src = r.all
	}
	var out []*Reconcile
	for _, rec := range src {
		if q.Parent != "" && rec.Parent != q.Parent {
			continue
		}
		if q.Controller == "" && !r.kept(rec) {
			continue
		}
		out = append(out, rec)
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out
}

// kept reports whether rec is still among its controller's last PerController. r.mu is held.
func (r *Recorder) kept(rec *Reconcile) bool {
	l := r.byCtl[rec.Controller]
	return len(l) > 0 && l[0].Seq <= rec.Seq
}

// Controllers returns the controllers with records.
func (r *Recorder) Controllers() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.byCtl))
	for c := range r.byCtl {
		out = append(out, c)
	}
	return out
}

type spanKey struct{}

// WithSpan returns ctx carrying s, for the calls and writes of one reconcile.
func WithSpan(ctx context.Context, s *Span) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, spanKey{}, s)
}

// SpanOf returns the Span ctx carries; nil, which records nothing, when none.
func SpanOf(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}
