package integration

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"metascript.dev/metascript/test/enginetest"
)

// TestOnlyHookEventsGoAsTheAccount: the Events a controller's hooks ask for are recorded as
// its account, so that their words, which are the tenant's, are refused where the account
// may not record Events; the engine's own Events about the same parents are recorded with
// the engine's account, so that the tenant sees them whatever the account may do. The
// account records Events in order: the hook's Event of a parent where it may not, asked for
// before another's where it may, was refused by the time the second is there.
func TestOnlyHookEventsGoAsTheAccount(t *testing.T) {
	home, quiet, loud := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	const name, account = "tenant-events", "events"
	noEvents := rightsBut(rightsBut(tenantRights, right("", "events", "create")), right("", "events", "patch"))
	grantRoleTo(t, quiet, home, account, "rights", noEvents...)
	grantRoleTo(t, loud, home, account, "rights", tenantRights...)
	controller(t, "tenant-writes.yaml", "kind: NamespacedCompositeController", "kind: CompositeController",
		"  childResources:", fmt.Sprintf("  serviceAccount: {namespace: %s, name: %s}\n  childResources:", home, account),
		"NAME", name, "FINALIZE", "")
	waitControllerReady(t, "CompositeController", name)
	recorded := func() float64 {
		return testutil.ToFloat64(env.Engine.Metrics.HookEvents.WithLabelValues("compositecontroller/"+name, "recorded"))
	}

	// In quiet, a hook's Event, and the engine's own: the API server refuses a child whose
	// data is not a string.
	asked := func(ns string) map[string]any {
		return map[string]any{"events": []any{map[string]any{"reason": "HookSaid", "message": "asked in " + ns}}}
	}
	steeredBundle(t, quiet, "q", name, asked(quiet))
	steeredBundle(t, quiet, "r", name, map[string]any{"items": []any{map[string]any{"name": "x", "value": 42}}})
	env.WaitEvent(t, wait, quiet, "r", "WriteFailed", "ConfigMap")
	enginetest.Eventually(t, wait, func() (bool, string) {
		return recorded() >= 1, fmt.Sprintf("%v hook Events handed to the account's recorder", recorded())
	})

	// In loud, the account may record Events: once its hook's Event is there, quiet's was sent
	// and refused.
	steeredBundle(t, loud, "l", name, asked(loud))
	env.WaitEvent(t, wait, loud, "l", "HookSaid", "asked in "+loud)
	if got := env.Events(t, quiet, "q")["HookSaid"]; len(got) > 0 {
		t.Errorf("the hook's Event was recorded where its account may not record Events: %q", got)
	}

	// Granted, the next sync's Event is recorded.
	grantRoleTo(t, quiet, home, account, "events", right("", "events", "create"), right("", "events", "patch"))
	poke(t, quiet, "q")
	env.WaitEvent(t, wait, quiet, "q", "HookSaid", "asked in "+quiet)
}
