package isolated_test

import (
	"context"
	"testing"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
	"metascript.dev/metascript/stdlib/hostile"
)

// TestHostileCallsIsolated runs stdlib's hostile hooks (stdlib/testdata/hostile.*, the
// cases of stdlib/hostile_test.go) through the isolated tier: each fails as in-process, with
// the same typed error, and its worker survives to serve the next case.
func TestHostileCallsIsolated(t *testing.T) {
	budget := hostile.Budget
	// metascript run's default limit; the race detector's shadow memory and sync.Pool drops
	// (see stdlib/hostile_test.go) need far more address space.
	limit := int64(512 << 20)
	if raceEnabled {
		limit = 8 << 30
	}
	pool, r := newPool(t, isolated.Options{MemoryLimit: limit})
	for _, l := range languages {
		t.Run(string(l.lang), func(t *testing.T) {
			prog, err := pool.Compile(l.lang, "hostile"+l.ext, source(t, "../../stdlib/testdata/hostile"+l.ext))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range hostile.Cases {
				t.Run(tc.Function, func(t *testing.T) {
					_, err := prog.Call(context.Background(), scripting.Invocation{Function: tc.Function, Request: map[string]any{}, Budget: budget})
					if ok, _ := tc.Match(err); ok {
						return
					}
					t.Fatalf("got %v, want %s", err, tc.Want)
				})
			}
		})
	}
	if got := r.get(); len(got) != 0 {
		t.Errorf("workers replaced: %v; every hostile call must fail inside its budgets", got)
	}
}
