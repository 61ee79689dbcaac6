package isolated_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
)

// TestWatchdogReplacesMisbehavingWorkers: a worker that does not answer within its call's
// timeout plus the grace, that does not answer a cancel within the grace, or that dies
// during a call is killed and replaced, the call fails (with the wall-clock limit, its
// context's error, or the worker's death), and the restart is counted under its reason.
// Without the watchdog the stalled calls would never return: each must end within a minute.
func TestWatchdogReplacesMisbehavingWorkers(t *testing.T) {
	cases := []struct {
		name, mode string
		timeout    time.Duration // the call's budget
		cancel     time.Duration // the caller's context; 0 for none
		want       string        // in the error
		reason     string
	}{
		{"past its timeout", "stall", 300 * time.Millisecond, 0, "did not answer within its budget's timeout plus grace", "timeout"},
		{"ignoring a cancel", "stall", time.Minute, 300 * time.Millisecond, "context deadline exceeded", "cancelled"},
		{"dying in a call", "crash", time.Minute, 0, "worker process", "crash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool, r := newPool(t, isolated.Options{Grace: 300 * time.Millisecond,
				Command: func() *exec.Cmd { return misbehavingWorker(c.mode) }})
			prog, err := pool.Compile(scripting.Starlark, "hooks.star", source(t, "testdata/hooks.star"))
			if err != nil {
				t.Fatal(err)
			}
			before := isolated.PIDs(pool)
			ctx := context.Background()
			if c.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.cancel)
				defer cancel()
			}
			done := make(chan error, 1)
			go func() {
				_, err := prog.Call(ctx, scripting.Invocation{Function: "echo", Request: map[string]any{"name": "x"},
					Budget: scripting.Budget{Timeout: c.timeout}})
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("the call has not returned after a minute: no watchdog stopped the worker")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if c.cancel > 0 && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a cancelled call's error %v is not its context's", err)
			}
			if got := r.get(); got[c.reason] != 1 {
				t.Errorf("restarts %v, want one %q", got, c.reason)
			}
			for _, pid := range before {
				if slices.Contains(isolated.PIDs(pool), pid) {
					t.Errorf("worker %d is still in the pool", pid)
				}
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("worker %d still runs (signal 0: %v)", pid, err)
				}
			}
		})
	}
}
