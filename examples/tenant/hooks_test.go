package tenant

import (
	"flag"
	"slices"
	"testing"

	"metascript.dev/metascript/examples/internal/exampletest"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

// TestHooksAgree runs both controllers' sync hooks offline through a Tenant's life — created,
// its Namespace Active, its viewers and quota dropped — and compares every response with the
// same golden file: the two languages must give byte-identical answers.
func TestHooksAgree(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			h := exampletest.NewHooksOf(t, "CompositeController", l, *update)
			tenant := exampletest.FromFile(t, "sample.yaml", "Tenant")

			created := h.Call("1-sync-nothing-observed", "sync", request(tenant, nil))
			if got := kinds(created); !slices.Equal(got, []string{"Namespace", "ResourceQuota", "RoleBinding", "RoleBinding"}) {
				t.Fatalf("children %v", got)
			}
			if order, _ := created["order"].([]any); len(order) != 3 {
				t.Fatalf("order %v: want the quota and both bindings waiting for the Namespace", created["order"])
			}

			ns := map[string]any{"apiVersion": "v1", "kind": "Namespace",
				"metadata": map[string]any{"name": "tenant-payments"}, "status": map[string]any{"phase": "Active"}}
			active := h.Call("2-sync-namespace-active", "sync", request(tenant, ns))
			if phase := active["status"].(map[string]any)["phase"]; phase != "Active" {
				t.Fatalf("status.phase %v, want Active", phase)
			}

			spec := tenant["spec"].(map[string]any)
			delete(spec, "viewers")
			delete(spec, "quota")
			if got := kinds(h.Call("3-sync-viewers-and-quota-dropped", "sync", request(tenant, ns))); !slices.Equal(got, []string{"Namespace", "RoleBinding"}) {
				t.Fatalf("children %v", got)
			}
		})
	}
}

// request is the sync request of tenant with ns, when not nil, as the observed Namespace.
func request(tenant, ns map[string]any) map[string]any {
	namespaces := map[string]any{}
	if ns != nil {
		namespaces["tenant-payments"] = ns
	}
	return map[string]any{
		"controller": map[string]any{},
		"parent":     tenant,
		"children": map[string]any{"Namespace.v1": namespaces, "ResourceQuota.v1": map[string]any{},
			"RoleBinding.rbac.authorization.k8s.io/v1": map[string]any{}},
		"related":    map[string]any{},
		"finalizing": false,
	}
}

// kinds lists the kinds of a response's children in order.
func kinds(resp map[string]any) []string {
	var out []string
	for _, c := range resp["children"].([]any) {
		out = append(out, c.(map[string]any)["kind"].(string))
	}
	return out
}
