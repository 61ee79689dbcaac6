package tenantpolicy

import (
	"fmt"
	"strings"
	"testing"

	"metascript.dev/metascript/test/enginetest"
)

// starlarkSync makes the child a Widget asks for.
const starlarkSync = `starlark: {source: "def sync(request):\n    p = request['parent']\n    return {'children': [{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': p['metadata']['name'] + '-child', 'labels': {'widget': p['metadata']['name']}}, 'data': {'value': p['spec']['value']}}]}\n"}`

// TestTenantAccountsDefaultOnly: without --tenant-service-accounts=any, a namespaced
// controller runs as its namespace's default ServiceAccount, named or not, and one naming
// another account does not run: Ready=False, InvalidSpec, saying what to do.
func TestTenantAccountsDefaultOnly(t *testing.T) {
	ns := tenantNamespace(t)
	other := namespacedController(t, ns, "other", "serviceAccount: {name: powerful}", starlarkSync)
	named := namespacedController(t, ns, "named", "serviceAccount: {name: default}", starlarkSync)
	namespacedController(t, ns, "unnamed", "", starlarkSync)

	want := `spec.serviceAccount.name: "powerful": this engine runs a NamespacedCompositeController as its namespace's "default" ServiceAccount only; ` +
		`remove spec.serviceAccount, or ask the platform to start the engine with --tenant-service-accounts=any`
	enginetest.Eventually(t, wait, func() (bool, string) {
		status, reason, msg := ready(t, other)
		return status == "False" && reason == "InvalidSpec" && strings.Contains(msg, want), fmt.Sprintf("Ready %s %s: %s", status, reason, msg)
	})
	widget(t, ns, "named", "named", "as-default")
	widget(t, ns, "unnamed", "unnamed", "as-default")
	widget(t, ns, "borrowed", "other", "as-powerful")
	enginetest.Eventually(t, wait, func() (bool, string) {
		a, b := childValue(t, ns, "named"), childValue(t, ns, "unnamed")
		return a == "as-default" && b == "as-default", fmt.Sprintf("children of the default account's controllers: %q, %q", a, b)
	})
	if status, reason, msg := ready(t, named); status != "True" {
		t.Errorf("the controller naming default: Ready %s %s: %s", status, reason, msg)
	}
	if v := childValue(t, ns, "borrowed"); v != "" {
		t.Errorf("the controller naming another account wrote a child: %q", v)
	}
}
