package javascript

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
)

func idleRuntimes() int {
	runtimePool.mu.Lock()
	defer runtimePool.mu.Unlock()
	return len(runtimePool.idle)
}

// TestIsolation runs each attack on a pooled Runtime and then observe on the same Runtime:
// what observe sees must equal what it saw before any attack.
func TestIsolation(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "pollution.js")
	call := func(fn string) (any, error) {
		return p.Call(context.Background(), scripting.Invocation{Function: fn, Request: testRequest()})
	}
	observe := func(t *testing.T) map[string]any {
		t.Helper()
		v, err := call("observe")
		if err != nil {
			t.Fatal(err)
		}
		return v.(map[string]any)
	}
	baseline := observe(t)
	if shapes := baseline["shapes"].(map[string]any); len(shapes) < 40 {
		t.Fatalf("observe saw only %d intrinsics", len(shapes))
	}
	// Results worth checking; the others list which attempts threw (writes to frozen objects
	// fail silently in sloppy code), which the observation after them judges.
	results := map[string]any{
		"attackGlobals": "done",
		"attackSymbols": []any{"leak", true, "undefined"},
		"attackJobs":    map[string]any{"value": int64(1)},
	}
	for _, attack := range []string{"attackPrototypes", "attackProtoChain", "attackDefine", "attackHidden",
		"attackGlobals", "attackSymbols", "attackJobs", "attackStatics", "overrides"} {
		t.Run(attack, func(t *testing.T) {
			built, idle := runtimesBuilt.Load(), idleRuntimes()
			v, err := call(attack)
			if err != nil {
				t.Fatal(err)
			}
			if want, ok := results[attack]; ok && !reflect.DeepEqual(v, want) {
				t.Fatalf("%s returned %v, want %v", attack, v, want)
			}
			after := observe(t)
			if runtimesBuilt.Load() != built || idleRuntimes() != idle {
				t.Fatalf("the attack and observe did not reuse one pooled Runtime (built %d→%d, idle %d→%d)",
					built, runtimesBuilt.Load(), idle, idleRuntimes())
			}
			for _, part := range []string{"behaviour", "shapes"} {
				want, got := baseline[part].(map[string]any), after[part].(map[string]any)
				for k := range want {
					if !reflect.DeepEqual(got[k], want[k]) {
						t.Errorf("%s.%s changed:\nbefore %v\nafter  %v", part, k, want[k], got[k])
					}
				}
			}
		})
	}
}

// TestOverrides: assignments that a frozen built-in would refuse but ordinary code makes
// define own properties, while writes to the built-ins themselves are refused.
func TestOverrides(t *testing.T) {
	p := compileFixture(t, newTestRuntime(), "pollution.js")
	v, err := p.Call(context.Background(), scripting.Invocation{Function: "overrides"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"error": "MyError: boom", "errorName": "MyError", "legacy": "legacy",
		"dict":      map[string]any{"constructor": int64(11), "toString": int64(8), "valueOf": int64(7), "hasOwnProperty": int64(14), "name": int64(4)},
		"inherited": true, "strictRefusal": "threw", "builtinRefusal": "threw",
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got  %v\nwant %v", v, want)
	}
}

// TestFailedCallDiscardsRuntime: a Runtime whose call failed a budget never returns to the
// pool; one whose hook threw does.
func TestFailedCallDiscardsRuntime(t *testing.T) {
	refillOff.Store(true)
	defer refillOff.Store(false)
	for refilling.Load() { // let a refill started by an earlier test land first
		time.Sleep(time.Millisecond)
	}
	rt := newTestRuntime()
	hostile := compileFixture(t, rt, "hostile.js")
	hooks := compileFixture(t, rt, "hooks.js")
	if _, err := hooks.Call(context.Background(), scripting.Invocation{Function: "counter"}); err != nil {
		t.Fatal(err)
	}
	budget := scripting.Budget{Timeout: 50 * time.Millisecond, MaxMemory: 32 << 20, MaxStackDepth: 200}
	for _, fn := range []string{"infiniteLoop", "deepRecursion", "stringBomb", "catchesRefusal", "sharedFanout"} {
		idle := idleRuntimes()
		_, err := hostile.Call(context.Background(), scripting.Invocation{Function: fn, Budget: budget})
		var be *scripting.BudgetError
		if !errors.As(err, &be) {
			t.Fatalf("%s: got %v, want a budget error", fn, err)
		}
		if got := idleRuntimes(); got != max(idle-1, 0) {
			t.Fatalf("%s: %d idle Runtimes after the call, want %d: the failed one went back", fn, got, max(idle-1, 0))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	idle := idleRuntimes()
	if _, err := hooks.Call(ctx, scripting.Invocation{Function: "counter"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if idleRuntimes() != idle {
		t.Fatalf("a call refused before it started took a Runtime")
	}
	idle = idleRuntimes()
	if _, err := hooks.Call(context.Background(), scripting.Invocation{Function: "throwError", Request: testRequest()}); err == nil {
		t.Fatal("throwError did not fail")
	}
	if got := idleRuntimes(); got != max(idle, 1) {
		t.Fatalf("%d idle Runtimes after a hook threw, want %d", got, max(idle, 1))
	}
}

// TestDiscardedRuntimeIsReplaced: after a call discards its Runtime, one is built in the
// background, so the next call does not pay for it.
func TestDiscardedRuntimeIsReplaced(t *testing.T) {
	for refilling.Load() {
		time.Sleep(time.Millisecond)
	}
	rt := newTestRuntime()
	hostile := compileFixture(t, rt, "hostile.js")
	before := runtimesBuilt.Load()
	budget := scripting.Budget{Timeout: 50 * time.Millisecond, MaxMemory: 32 << 20, MaxStackDepth: 200}
	if _, err := hostile.Call(context.Background(), scripting.Invocation{Function: "deepRecursion", Budget: budget}); err == nil {
		t.Fatal("deepRecursion did not fail")
	}
	deadline := time.Now().Add(10 * time.Second)
	for refilling.Load() || runtimesBuilt.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("no Runtime built to replace the discarded one")
		}
		time.Sleep(time.Millisecond)
	}
	if idleRuntimes() == 0 {
		t.Fatal("the replacement Runtime did not reach the pool")
	}
}
