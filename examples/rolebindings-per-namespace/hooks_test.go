package rolebindingspernamespace

import (
	"flag"
	"testing"

	"metascript.dev/metascript/examples/internal/exampletest"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

// TestHooksAgree runs both controllers' hooks offline through a life cycle of the sample's
// ClusterRole — bound, converged, both lists edited, opted out step by step — feeding each
// step the RoleBindings the previous one asked for, and compares every response with the same
// golden file: the two languages must give byte-identical answers.
func TestHooksAgree(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			h := exampletest.NewHooks(t, l, *update, "json", "re", "strings")
			role := sample(t)
			created := h.Call("1-sync-nothing-observed", "sync", request(role, nil, false))

			role["metadata"].(map[string]any)["annotations"].(map[string]any)[boundAnnotation] = "" // as created applied it
			converged := h.Call("2-sync-all-observed", "sync", request(role, created["attachments"], false))

			// Both lists edited: team-a dropped, team-c added (team-b twice), more subjects.
			annotations := role["metadata"].(map[string]any)["annotations"].(map[string]any)
			annotations[boundAnnotation] = "team-a,team-b"
			annotations[namespacesAnnotation] = "team-c,team-b, team-b"
			annotations[subjectsAnnotation] = "Group:config-readers, ServiceAccount:reporter, User:alice, ServiceAccount:ops/auditor"
			h.Call("3-sync-lists-edited", "sync", request(role, converged["attachments"], false))

			// Opting out: the namespaces annotation goes, so the engine calls finalize.
			delete(annotations, namespacesAnnotation)
			first := h.Call("4-finalize-bindings-observed", "finalize", request(role, converged["attachments"], true))
			h.Call("5-finalize-nothing-left", "finalize", request(role, first["attachments"], true))
		})
	}
}

// sample is the sample's ClusterRole as the API server would hand it to the engine.
func sample(t *testing.T) map[string]any {
	t.Helper()
	role := exampletest.FromFile(t, "sample.yaml", "ClusterRole")
	role["metadata"].(map[string]any)["uid"] = "5a3e0c1e-0000-4000-8000-000000000003"
	return role
}

// request is the decorator request for role with desired (a response's attachments)
// observed. The target is cluster-scoped, so attachments are keyed "namespace/name".
func request(role map[string]any, desired any, finalizing bool) map[string]any {
	bindings := map[string]any{}
	list, _ := desired.([]any)
	for _, a := range list {
		md := a.(map[string]any)["metadata"].(map[string]any)
		bindings[md["namespace"].(string)+"/"+md["name"].(string)] = a
	}
	return map[string]any{
		"controller":  map[string]any{"metadata": map[string]any{"name": "rolebindings-per-namespace"}},
		"object":      role,
		"attachments": map[string]any{"RoleBinding.rbac.authorization.k8s.io/v1": bindings},
		"related":     map[string]any{},
		"finalizing":  finalizing,
	}
}
