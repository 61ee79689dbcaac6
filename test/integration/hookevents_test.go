package integration

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"metascript.dev/metascript/test/enginetest"
)

// TestHookEventsAreRecordedWithinARate: the Events a sync hook asks for are recorded on its
// parent as it asked; a hook that asks at every call gets a burst of ten per parent, and the
// rest are counted as limited.
func TestHookEventsAreRecordedWithinARate(t *testing.T) {
	controller(t, "hookevents.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "e", "hookevents", "e")
	enginetest.Eventually(t, wait, func() (bool, string) {
		ev := env.Events(t, ns, "e")
		return slices.Contains(ev["Synced"], "generation 1 synced") && slices.Contains(ev["ItemsShort"], "generation 1: fewer items than wanted"),
			fmt.Sprintf("events %v", ev)
	})
	// Each change is a new generation: three more Events asked for at each sync.
	for i := range 5 {
		actedOn(t, "compositecontroller/hookevents", 1, func() {
			env.Patch(t, b, fmt.Sprintf(`{"spec":{"items":[%q]}}`, fmt.Sprint(i)))
		})
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		recorded := testutil.ToFloat64(env.Engine.Metrics.HookEvents.WithLabelValues("compositecontroller/hookevents", "recorded"))
		limited := testutil.ToFloat64(env.Engine.Metrics.HookEvents.WithLabelValues("compositecontroller/hookevents", "limited"))
		n := 0
		for _, msgs := range env.Events(t, ns, "e") {
			n += len(msgs)
		}
		return recorded == 10 && limited >= 8 && n == 10,
			fmt.Sprintf("recorded %v, limited %v, Events on the parent %d; want 10 recorded, 8 or more limited, 10 Events", recorded, limited, n)
	})
}
