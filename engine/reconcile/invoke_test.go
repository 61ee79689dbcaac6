package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestHookCallsBound: however many calls a controller's workers and map calls start, no
// more than Env.HookCalls run at once.
func TestHookCallsBound(t *testing.T) {
	for _, bound := range []int{1, 3} {
		hook := &busyHook{}
		r := &Runner{name: "test/bound", calls: callSlots(bound),
			built: &Built{Hooks: map[string]hooks.Invoker{"sync": hook}},
			cfg:   Config{Env: Env{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Recorder: record.NewFakeRecorder(100)}}}
		parent := &unstructured.Unstructured{}
		parent.SetName("p")
		var wg sync.WaitGroup
		for range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.invoke(context.Background(), "sync", "", map[string]any{}, parent); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if most := hook.most.Load(); most > int32(bound) || most < 1 {
			t.Errorf("bound %d: %d calls ran at once", bound, most)
		}
	}
}

// TestInlineCallsTakeCores: with one core slot in the engine, no two inline calls run at
// once, whatever the controller's own bound allows.
func TestInlineCallsTakeCores(t *testing.T) {
	hook := &busyHook{}
	r := &Runner{name: "test/cores", calls: callSlots(8),
		built: &Built{Hooks: map[string]hooks.Invoker{"sync": hook}},
		cfg: Config{Env: Env{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Recorder: record.NewFakeRecorder(100),
			Cores: fairshare.NewSlots(1, time.Second)}}}
	parent := &unstructured.Unstructured{}
	parent.SetName("p")
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.invoke(context.Background(), "sync", "", map[string]any{}, parent); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most := hook.most.Load(); most != 1 {
		t.Errorf("%d inline calls ran at once, want 1", most)
	}
}
