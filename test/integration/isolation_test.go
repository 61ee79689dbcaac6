package integration

import (
	"fmt"
	"strings"
	"testing"

	"metascript.dev/metascript/test/enginetest"
)

// TestIsolationRefusedWithoutTier: this suite's engine runs no isolated tier, so a
// controller asking for spec.isolation: Process is refused as InvalidSpec, saying how to
// run one, rather than run in-process. test/isolated runs the tier itself.
func TestIsolationRefusedWithoutTier(t *testing.T) {
	controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-isolation-refused",
		"  parentResource:", "  isolation: Process\n  parentResource:")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", "bundle-isolation-refused")
		reason, msg := conditionReason(cur, "Ready"), conditionMessage(cur, "Ready")
		return reason == "InvalidSpec" && strings.Contains(msg, "spec.isolation: Process: this engine runs no isolated tier (metascript run --isolated-workers)"),
			fmt.Sprintf("Ready: %s %q", reason, msg)
	})
}
