package stdlib_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/stdlib/hostile"
)

// TestHostileCalls runs testdata/hostile.<ext> in every language: stdlib calls that amplify
// a large argument (decoding, splitting, matching everywhere, quoting it in an error). Each
// must end in the expected error without the process allocating twice the memory budget
// during the call (a looser bound for matching under the race detector, below), and within a
// small multiple of its timeout.
func TestHostileCalls(t *testing.T) {
	// What is checked is each call's refusal before it allocates; the timeout only stops a
	// runaway, and is generous because building the 8 MiB inputs under the race detector on a
	// busy machine takes seconds.
	budget := hostile.Budget
	for _, fl := range fixtureLanguages {
		t.Run(string(fl.lang), func(t *testing.T) {
			c := requireCompiler(t, fl.lang)
			src, err := os.ReadFile("testdata/hostile" + fl.ext)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := scripting.NewRuntime(scripting.Options{}, c).Compile(fl.lang, "hostile"+fl.ext, string(src))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range hostile.Cases {
				t.Run(tc.Function, func(t *testing.T) {
					allocs := scripting.StartMemoryWatch(0, nil)
					start := time.Now()
					_, err := prog.Call(context.Background(), scripting.Invocation{Function: tc.Function, Request: map[string]any{}, Budget: budget})
					elapsed := time.Since(start)
					// Under the race detector sync.Pool drops a quarter of what is put back,
					// so package regexp makes a new matching machine for about every fourth
					// match: a call finding many matches allocates some 17 times its budget
					// (measured: 540 MiB for 32 MiB) where production allocates less than
					// twice. The bound is looser there, still far below what a call without
					// its match limit allocates under the race detector (13 GiB measured).
					used, bound := allocs.Stop(), 2*budget.MaxMemory
					if raceEnabled && strings.HasPrefix(tc.Function, "re_") {
						bound = 32 * budget.MaxMemory
					}
					if used >= bound {
						t.Errorf("the process allocated %d MiB during the call, %d MiB or more (budget %d MiB)", used>>20, bound>>20, budget.MaxMemory>>20)
					}
					if elapsed > 5*budget.Timeout {
						t.Errorf("the call took %v, more than 5 times its timeout", elapsed)
					}
					if ok, re := tc.Match(err); ok {
						if re != nil && len(re.Msg) > 4096 {
							t.Errorf("error message of %d bytes", len(re.Msg))
						}
						return
					}
					t.Fatalf("got %v, want %s", err, tc.Want)
				})
			}
		})
	}
}
