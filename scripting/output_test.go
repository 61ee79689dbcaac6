package scripting

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestOutputErrorPaths(t *testing.T) {
	cases := []struct {
		wrap func(error) error
		want string
	}{
		{func(e error) error { return e }, ""},
		{func(e error) error { return AtKey(e, "name") }, "name"},
		{func(e error) error { return AtKey(AtKey(AtIndex(AtKey(e, "name"), 3), "children"), "x") }, "x.children[3].name"},
		{func(e error) error {
			return AtKey(AtKey(AtIndex(AtKey(AtKey(e, "name"), "metadata"), 3), "children"), "")
		}, `[""].children[3].metadata.name`},
		{func(e error) error { return AtKey(AtKey(e, "app.kubernetes.io/name"), "labels") }, `labels["app.kubernetes.io/name"]`},
		{func(e error) error { return AtIndex(AtIndex(e, 1), 0) }, "[0][1]"},
		{func(e error) error { return AtKey(AtIndex(e, 2), "7up") }, `["7up"][2]`},
	}
	for _, c := range cases {
		err := c.wrap(NewOutputError(Starlark, "expected string, got int"))
		var oe *OutputError
		if !errors.As(err, &oe) || oe.Path != c.want {
			t.Errorf("path = %q, want %q", oe.Path, c.want)
		}
	}
	other := errors.New("x")
	if AtKey(other, "a") != other || AtIndex(other, 1) != other {
		t.Error("non-output errors must pass through unchanged")
	}
}

func TestOutputMeterRefusesPastEitherCap(t *testing.T) {
	cases := []struct {
		budget   Budget
		adds     []int64
		failAt   int
		wantUnit string
	}{
		{Budget{MaxOutputObjects: 3, MaxOutputBytes: 1 << 20}, []int64{1, 1, 1, 1}, 3, "objects"},
		{Budget{MaxOutputObjects: 100, MaxOutputBytes: 100}, []int64{60, 40, 1}, 2, "bytes"},
		{Budget{MaxOutputObjects: 100, MaxOutputBytes: 100}, []int64{60, 40}, -1, ""},
	}
	for i, c := range cases {
		m := NewOutputMeter(Starlark, c.budget)
		failed := -1
		var err error
		for j, b := range c.adds {
			if err = m.Add(b); err != nil {
				failed = j
				break
			}
		}
		if failed != c.failAt {
			t.Errorf("case %d: failed at %d, want %d", i, failed, c.failAt)
			continue
		}
		var be *BudgetError
		if c.failAt >= 0 && (!errors.As(err, &be) || be.Budget != BudgetOutput || be.Unit != c.wantUnit) {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

var sink [][]byte

func TestWatchMemoryCancelsPastItsLimit(t *testing.T) {
	var cancelled atomic.Int64
	stop := WatchMemory(8<<20, func(used int64) { cancelled.Store(used) })
	deadline := time.Now().Add(5 * time.Second)
	for cancelled.Load() == 0 && time.Now().Before(deadline) {
		sink = append(sink, make([]byte, 64<<10))
		if len(sink) > 64 {
			sink = sink[:0]
		}
	}
	used := stop()
	sink = nil
	if c := cancelled.Load(); c <= 8<<20 {
		t.Fatalf("not cancelled past the limit: cancel saw %d", c)
	}
	if used < cancelled.Load() {
		t.Fatalf("stop reported %d, less than the %d charged at cancellation", used, cancelled.Load())
	}
}

func TestWatchMemoryIdleInvocationIsNotCancelled(t *testing.T) {
	var cancelled atomic.Bool
	stop := WatchMemory(1<<30, func(int64) { cancelled.Store(true) })
	time.Sleep(5 * WatchdogInterval)
	stop()
	if cancelled.Load() {
		t.Fatal("cancelled without allocating")
	}
}

func BenchmarkWatchMemoryStartStop(b *testing.B) {
	for b.Loop() {
		stop := WatchMemory(1<<30, func(int64) {})
		stop()
	}
}
