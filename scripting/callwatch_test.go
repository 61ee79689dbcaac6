package scripting

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// stopFunc is a func as a Canceler.
type stopFunc func(StopReason)

func (f stopFunc) Cancel(r StopReason) { f(r) }

// startCounted starts w with a cancel that counts its calls and remembers the last reason.
func startCounted(t *testing.T, w *CallWatch, ctx context.Context, b Budget) (calls *atomic.Int32, last *atomic.Int32) {
	t.Helper()
	calls, last = new(atomic.Int32), new(atomic.Int32)
	w.Start(ctx, JavaScript, "hook", b.WithDefaults(DefaultBudget), stopFunc(func(r StopReason) {
		calls.Add(1)
		last.Store(int32(r))
	}))
	return calls, last
}

func TestCallWatchFirstReasonWins(t *testing.T) {
	var w CallWatch
	calls, last := startCounted(t, &w, context.Background(), Budget{Timeout: time.Hour})
	w.Stop(StoppedSteps)
	w.Stop(StoppedRefused)
	if w.End() {
		t.Error("End reports a stopped call as unstopped")
	}
	if calls.Load() != 1 || StopReason(last.Load()) != StoppedSteps || w.Reason() != StoppedSteps {
		t.Errorf("cancel called %d times, last with %v, reason %v; want once, with %v", calls.Load(),
			StopReason(last.Load()), w.Reason(), StoppedSteps)
	}
	if err := w.Err(nil); err != nil {
		t.Errorf("Err for an adapter's reason: %v, want nil", err)
	}
}

func TestCallWatchIgnoresStopsAfterEnd(t *testing.T) {
	var w CallWatch
	calls, _ := startCounted(t, &w, context.Background(), Budget{Timeout: time.Hour})
	if !w.End() {
		t.Fatal("End reports an unstopped call as stopped")
	}
	w.Stop(StoppedTimeout)
	if calls.Load() != 0 || w.Reason() != NotStopped {
		t.Errorf("a stop after End: cancel called %d times, reason %v", calls.Load(), w.Reason())
	}
}

func TestCallWatchTimeout(t *testing.T) {
	var w CallWatch
	calls, _ := startCounted(t, &w, context.Background(), Budget{Timeout: time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	w.End()
	stack := []Frame{{Function: "sync"}}
	var be *BudgetError
	if err := w.Err(stack); !errors.As(err, &be) || be.Budget != BudgetTimeout || be.Unit != "ns" ||
		be.Limit != int64(time.Millisecond) || be.Used < be.Limit || len(be.Stack) != 1 {
		t.Fatalf("Err = %#v, want the timeout budget at the stack", err)
	}
}

func TestCallWatchContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var w CallWatch
	calls, _ := startCounted(t, &w, ctx, Budget{Timeout: time.Hour})
	cause := errors.New("parent deleted")
	cancel(cause)
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	w.End()
	if err := w.Err(nil); !errors.Is(err, cause) || err.Error() != "javascript hook hook: parent deleted" {
		t.Fatalf("Err = %v, want the context's cause", err)
	}
}

func TestCallWatchRefusal(t *testing.T) {
	var w CallWatch
	startCounted(t, &w, context.Background(), Budget{Timeout: time.Hour, MaxMemory: 1 << 20})
	defer w.End()
	if w.Refusal(nil) != nil {
		t.Fatal("a refusal before any was made")
	}
	err := w.Reserve(2 << 20)
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != BudgetMemory {
		t.Fatalf("Reserve past the limit = %v, want a memory BudgetError", err)
	}
	w.Refuse(w.Exceeded(BudgetSteps, 1, nil))
	stack := []Frame{{Function: "sync"}}
	got := w.Refusal(stack)
	if got.Budget != BudgetMemory || len(got.Stack) != 1 || len(be.Stack) != 0 {
		t.Fatalf("Refusal = %#v, want the first refusal, located at the stack, its original unchanged", got)
	}
	if w.Reason() != NotStopped {
		t.Errorf("a refusal stopped the call: %v", w.Reason())
	}
}
