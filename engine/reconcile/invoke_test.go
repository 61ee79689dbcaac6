package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"metascript.dev/metascript/engine/fairshare"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/metrics"
)

// busyHook records how many of its calls run at once.
type busyHook struct {
	now, most atomic.Int32
}

func (h *busyHook) Invoke(ctx context.Context, _ map[string]any, _ *slog.Logger) (map[string]any, error) {
	n := h.now.Add(1)
	defer h.now.Add(-1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	time.Sleep(5 * time.Millisecond)
	return map[string]any{}, nil
}

func (h *busyHook) Form() string { return "starlark" }

// mostAtOnce makes n concurrent sync calls through a Runner whose hook call bound is calls
// and whose engine has cores (nil: none), and returns how many ran at once at the most.
func mostAtOnce(t *testing.T, n, calls int, cores *fairshare.Cores) int32 {
	t.Helper()
	hook := &busyHook{}
	r := &Runner{name: "test/bound", calls: callSlots(calls),
		program: &Program{Hooks: map[string]hooks.Invoker{"sync": hook}},
		cfg: Config{Env: Env{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Recorder: record.NewFakeRecorder(100),
			Cores: cores}}}
	parent := &unstructured.Unstructured{}
	parent.SetName("p")
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.invoke(context.Background(), "sync", "", map[string]any{}, parent); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return hook.most.Load()
}

// TestHookCallsBound: however many calls a controller's workers and map calls start, no
// more than Env.HookCalls run at once, nor more inline calls than the engine's core slots.
func TestHookCallsBound(t *testing.T) {
	cases := []struct {
		name     string
		calls    int
		cores    *fairshare.Cores
		min, max int32
	}{
		{"bound 1", 1, nil, 1, 1},
		{"bound 3", 3, nil, 1, 3},
		{"one core slot, bound 8", 8, fairshare.NewCores(1, time.Second, time.Hour, time.Hour), 1, 1},
	}
	for _, c := range cases {
		if most := mostAtOnce(t, 12, c.calls, c.cores); most < c.min || most > c.max {
			t.Errorf("%s: %d calls ran at once, want %d to %d", c.name, most, c.min, c.max)
		}
	}
}

// blockingHook is a webhook that answers once released.
type blockingHook struct {
	called  chan struct{}
	release chan struct{}
}

func (h *blockingHook) Invoke(ctx context.Context, _ map[string]any, _ *slog.Logger) (map[string]any, error) {
	h.called <- struct{}{}
	<-h.release
	return map[string]any{}, nil
}

func (h *blockingHook) Form() string { return "webhook" }

// TestWebhookFreesItsSeat: while a reconcile waits on a webhook, its seat is free for
// another tenant's reconcile; once the webhook answers, the reconcile holds a seat again.
func TestWebhookFreesItsSeat(t *testing.T) {
	seats := fairshare.NewSlots(1, 0)
	hook := &blockingHook{called: make(chan struct{}), release: make(chan struct{})}
	flow := fairshare.Flow{Tenant: "namespace/team-a", Controller: "test/hung"}
	r := &Runner{name: flow.Controller, flow: flow,
		program: &Program{Hooks: map[string]hooks.Invoker{"sync": hook}},
		cfg: Config{Env: Env{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Recorder: record.NewFakeRecorder(100),
			Seats: seats}}}
	parent := &unstructured.Unstructured{}
	parent.SetName("p")
	s := &seat{seats: seats, flow: flow}
	if err := s.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := r.invoke(withSeat(context.Background(), s), "sync", "", map[string]any{}, parent); err != nil {
			t.Error(err)
		}
	}()
	<-hook.called
	other := fairshare.Flow{Tenant: "namespace/team-b", Controller: "test/healthy"}
	if !seats.TryAcquire(other) {
		t.Fatal("the only seat is held while its reconcile waits on a webhook")
	}
	seats.Release(other)
	close(hook.release)
	<-done
	if !s.held || s.away != 0 {
		t.Fatalf("held %v, away %d: want the seat held again once the webhook answered", s.held, s.away)
	}
	if all, _ := seats.Held(""); all != 1 {
		t.Fatalf("%d seats held, want the reconcile's 1", all)
	}
	s.give()
}

// TestParallelWebhooksShareTheSeat: calls a reconcile makes in parallel (map calls) give
// back its one seat while any of them waits, and the reconcile holds exactly one again once
// the last has answered.
func TestParallelWebhooksShareTheSeat(t *testing.T) {
	seats := fairshare.NewSlots(2, 0)
	flow := fairshare.Flow{Tenant: "t", Controller: "c"}
	s := &seat{seats: seats, flow: flow}
	if err := s.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	release := make(chan struct{})
	left := make(chan struct{}, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			back := s.leave(context.Background())
			left <- struct{}{}
			<-release
			back()
		}()
	}
	for range 8 {
		<-left
	}
	if all, _ := seats.Held(""); all != 0 {
		t.Fatalf("%d seats held while every call waits", all)
	}
	close(release)
	wg.Wait()
	if all, _ := seats.Held(""); all != 1 || !s.held {
		t.Fatalf("%d seats held (held %v) once every call answered, want 1", all, s.held)
	}
	s.give()
	if all, _ := seats.Held(""); all != 0 {
		t.Fatalf("%d seats held after the reconcile ended", all)
	}
}

// TestFailureEventsWithinTheControllersRate: the engine records a burst of Events about a
// controller's failing parents, then drops the rest (counted) until its rate allows more.
func TestFailureEventsWithinTheControllersRate(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	r := &Runner{name: "test/failing", failureEvents: rate.NewLimiter(rate.Every(time.Hour), 3),
		cfg: Config{Env: Env{Metrics: metrics.New(), Recorder: rec}}}
	parent := &unstructured.Unstructured{}
	parent.SetName("p")
	for range 10 {
		r.warn(parent, "HookFailed", errors.New("boom"))
	}
	if n := len(rec.Events); n != 3 {
		t.Fatalf("%d Events recorded, want the burst of 3", n)
	}
	var m dto.Metric
	if err := r.cfg.Metrics.EngineEvents.WithLabelValues("test/failing", "limited").Write(&m); err != nil || m.GetCounter().GetValue() != 7 {
		t.Fatalf("limited counted %v (%v), want 7", m.GetCounter().GetValue(), err)
	}
}
