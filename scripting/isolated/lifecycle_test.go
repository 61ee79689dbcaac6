package isolated_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
)

// TestCloseReapsWorkers: after Close no worker process exists, not even as a zombie (kill
// with signal 0 succeeds on a zombie).
func TestCloseReapsWorkers(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{Workers: 3})
	prog, err := pool.Compile(scripting.Starlark, "hooks.star", source(t, "testdata/hooks.star"))
	if err != nil {
		t.Fatal(err)
	}
	// Three calls at once start all three workers.
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := prog.Call(context.Background(), scripting.Invocation{Function: "echo", Request: map[string]any{"name": "x"}})
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	pids := isolated.PIDs(pool)
	if len(pids) == 0 {
		t.Fatal("no workers")
	}
	pool.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d still exists after Close: %v", pid, err)
		}
	}
}

// TestWaitForWorkerEndsWithContext: a call waiting for a busy worker gives up when its
// context ends.
func TestWaitForWorkerEndsWithContext(t *testing.T) {
	pool, _ := newPool(t, isolated.Options{Workers: 1})
	prog, err := pool.Compile(scripting.Starlark, "hooks.star", source(t, "testdata/hooks.star"))
	if err != nil {
		t.Fatal(err)
	}
	busy, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := prog.Call(busy, scripting.Invocation{Function: "loop", Request: map[string]any{},
			Budget: scripting.Budget{Timeout: 20 * time.Second, MaxSteps: 1 << 62}})
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); isolated.Free(pool) != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first call never took the worker")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := prog.Call(ctx, scripting.Invocation{Function: "echo", Request: map[string]any{"name": "x"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting call: got %v, want the context's error", err)
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("busy call: got %v, want context.Canceled", err)
	}
}
