package isolated_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
)

// TestHostileCallsIsolated runs stdlib's hostile hooks (stdlib/testdata/hostile.*, the
// cases of stdlib/hostile_test.go) through the isolated tier: each fails as in-process, with
// the same typed error, and its worker survives to serve the next case.
func TestHostileCallsIsolated(t *testing.T) {
	budget := scripting.Budget{Timeout: 10 * time.Second, MaxSteps: 5_000_000, MaxMemory: 32 << 20}
	cases := []struct{ function, want string }{
		{"json_decode_bomb", "json.decode: result too large"},
		{"json_decode_objects_bomb", "json.decode: result too large"},
		{"json_encode_escapes_bomb", "budget:" + scripting.BudgetMemory},
		{"yaml_decode_bomb", "yaml.decode: result too large"},
		{"yaml_decode_flow_bomb", "yaml.decode: result too large"},
		{"strings_split_bomb", "strings.split: result too large"},
		{"strings_split_runes_bomb", "strings.split: result too large"},
		{"strings_fields_bomb", "strings.fields: result too large"},
		{"re_find_all_empty_bomb", "re.find_all: result too large|budget:" + scripting.BudgetMemory},
		{"re_split_empty_bomb", "re.split: result too large|budget:" + scripting.BudgetMemory},
		{"re_replace_bomb", "re.replace: result too large|budget:" + scripting.BudgetMemory},
		{"re_pattern_bomb", "longer than the limit of 16384"},
		{"time_parse_quote_bomb", `parsing time "\x01\x01`},
		{"quantity_bomb", "longer than 64 characters"},
		{"selector_bomb", "k8s.match_selector: result too large"},
		{"name_bomb", "k8s.name: result too large"},
		{"shared_argument_bomb", "budget:" + scripting.BudgetOutput + "|budget:" + scripting.BudgetMemory},
	}
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
			for _, tc := range cases {
				t.Run(tc.function, func(t *testing.T) {
					_, err := prog.Call(context.Background(), scripting.Invocation{Function: tc.function, Request: map[string]any{}, Budget: budget})
					var be *scripting.BudgetError
					var re *scripting.RuntimeError
					for _, want := range strings.Split(tc.want, "|") {
						if name, ok := strings.CutPrefix(want, "budget:"); ok {
							if errors.As(err, &be) && be.Budget == name {
								return
							}
						} else if errors.As(err, &re) && strings.Contains(re.Msg, want) {
							return
						}
					}
					t.Fatalf("got %v, want %s", err, tc.want)
				})
			}
		})
	}
	if got := r.get(); len(got) != 0 {
		t.Errorf("workers replaced: %v; every hostile call must fail inside its budgets", got)
	}
}
