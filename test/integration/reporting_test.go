package integration

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
)

// TestWriteRefusedIsReported: a child the API server refuses leaves the parent with a
// Warning Event and Synced=False naming the child and the server's message, beside the
// hook's own status; once the hook asks for something valid, Synced turns True and the
// hook's status is kept.
func TestWriteRefusedIsReported(t *testing.T) {
	controller(t, "refused.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "r", "refused", "r")
	env.Patch(t, b, `{"spec":{"refuse":true}}`)
	var got *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		got = getBundle(t, ns, "r")
		return enginetest.Condition(got, "Synced") == "False", fmt.Sprintf("status %v", got.Object["status"])
	})
	msg := conditionMessage(got, "Synced")
	if !strings.Contains(msg, "ConfigMap "+ns+"/r-a") || !refusedAsNotAString(msg) {
		t.Fatalf("Synced message %q does not name the child and the server's message", msg)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "mine"); s != "set" {
		t.Fatalf("the hook's status was not written beside the condition: %v", got.Object["status"])
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		ev := env.Events(t, ns, "r")
		for _, m := range ev["WriteFailed"] {
			if strings.Contains(m, "r-a") && refusedAsNotAString(m) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %v", ev)
	})
	env.Patch(t, b, `{"spec":{"refuse":false}}`)
	waitValue(t, ns, "r-a", "ok")
	enginetest.Eventually(t, wait, func() (bool, string) {
		got = getBundle(t, ns, "r")
		s, _, _ := unstructured.NestedString(got.Object, "status", "mine")
		return enginetest.Condition(got, "Synced") == "True" && s == "set", fmt.Sprintf("status %v", got.Object["status"])
	})
}

// TestBudgetAboveCeilingsIsReported: a hook asking for more than the engine's ceilings runs
// under the ceilings, and its controller's status says which fields were cut down.
func TestBudgetAboveCeilingsIsReported(t *testing.T) {
	cc := controller(t, "refused.yaml")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", cc.GetName())
		msg := conditionMessage(cur, "BudgetsCapped")
		return enginetest.Condition(cur, "BudgetsCapped") == "True" && enginetest.Condition(cur, "Ready") == "True" &&
				strings.Contains(msg, "hooks.sync.budget.timeout 1h0m0s exceeds the engine's ceiling 10s") &&
				strings.Contains(msg, "hooks.sync.budget.maxMemory 64Gi exceeds the engine's ceiling 256Mi"),
			fmt.Sprintf("conditions %v", cur.Object["status"])
	})
	other := controller(t, "bundle-starlark.yaml")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", other.GetName())
		return enginetest.Condition(cur, "BudgetsCapped") == "False", fmt.Sprintf("conditions %v", cur.Object["status"])
	})
}

// refusedAsNotAString reports whether msg holds the API server's refusal of a number where a
// string belongs: a create says it cannot unmarshal it, an apply that it expected a string.
func refusedAsNotAString(msg string) bool {
	return strings.Contains(msg, "cannot unmarshal number into Go struct field ConfigMap.data of type string") ||
		strings.Contains(msg, "expected string")
}
