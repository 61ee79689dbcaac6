// Package hostile lists the hostile stdlib calls of stdlib/testdata/hostile.star and
// hostile.js (calls that amplify a large argument: decoding, splitting, matching everywhere,
// quoting it in an error) with the error each must end in. The in-process tests (package
// stdlib) and the isolated tier's (scripting/isolated) run the same cases.
package hostile

import (
	"errors"
	"strings"
	"time"

	"metascript.dev/metascript/scripting"
)

// Case is one hostile function and what its call must end in: a substring of the
// *scripting.RuntimeError's message, or "budget:<name>" for a *scripting.BudgetError;
// alternatives are separated by "|" where the allocation watchdog may stop the hook first.
type Case struct {
	Function, Want string
}

// Cases are every function of the fixtures, in order.
var Cases = []Case{
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

// Budget is the budget every case is called with: what is checked is each call's refusal
// before it allocates; the timeout only stops a runaway, and is generous because building
// the 8 MiB inputs under the race detector on a busy machine takes seconds.
var Budget = scripting.Budget{Timeout: 30 * time.Second, MaxSteps: 5_000_000, MaxMemory: 32 << 20}

// Match reports whether err is one of the endings c wants. A runtime error matched is
// returned, so that callers can check more of it; nil when a budget error matched or none.
func (c Case) Match(err error) (ok bool, matched *scripting.RuntimeError) {
	var be *scripting.BudgetError
	var re *scripting.RuntimeError
	for _, want := range strings.Split(c.Want, "|") {
		if name, isBudget := strings.CutPrefix(want, "budget:"); isBudget {
			if errors.As(err, &be) && be.Budget == name {
				return true, nil
			}
		} else if errors.As(err, &re) && strings.Contains(re.Msg, want) {
			return true, re
		}
	}
	return false, nil
}
