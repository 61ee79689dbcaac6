package serviceperobject

import (
	"flag"
	"testing"

	"metascript.dev/metascript/examples/internal/exampletest"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

// TestHooksAgree runs both controllers' hooks offline through a life cycle of the sample —
// exposed, converged, port changed, opted out step by step — feeding each step the Service
// the previous one asked for, and compares every response with the same golden file: the two
// languages must give byte-identical answers.
func TestHooksAgree(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			h := exampletest.NewHooks(t, l, *update, "json", "re", "strings")
			backend := sample(t)
			created := h.Call("1-sync-nothing-observed", "sync", request(backend, nil, false))

			backend["metadata"].(map[string]any)["labels"] = created["labels"]
			backend["status"] = created["status"]
			converged := h.Call("2-sync-service-observed", "sync", request(backend, created["attachments"], false))

			backend["status"] = converged["status"]
			annotate(backend, " 9090 ")
			h.Call("3-sync-port-changed", "sync", request(backend, converged["attachments"], false))

			// Opting out: the annotation goes, so the engine calls finalize.
			delete(backend["metadata"].(map[string]any)["annotations"].(map[string]any), portAnnotation)
			first := h.Call("4-finalize-service-observed", "finalize", request(backend, converged["attachments"], true))
			h.Call("5-finalize-nothing-left", "finalize", request(backend, first["attachments"], true))
		})
	}
}

// sample is sample.yaml as the API server would hand it to the engine.
func sample(t *testing.T) map[string]any {
	t.Helper()
	obj := exampletest.FromFile(t, "sample.yaml", "Backend")
	md := obj["metadata"].(map[string]any)
	md["namespace"], md["uid"], md["generation"] = "default", "5a3e0c1e-0000-4000-8000-000000000002", int64(1)
	return obj
}

func annotate(obj map[string]any, port string) {
	obj["metadata"].(map[string]any)["annotations"].(map[string]any)[portAnnotation] = port
}

// request is the decorator request for obj with desired (a response's attachments) observed,
// as the API server stores them: with a cluster IP.
func request(obj map[string]any, desired any, finalizing bool) map[string]any {
	services := map[string]any{}
	list, _ := desired.([]any)
	for _, a := range list {
		svc := a.(map[string]any)
		svc["spec"].(map[string]any)["clusterIP"] = "10.0.0.42"
		services[svc["metadata"].(map[string]any)["name"].(string)] = svc
	}
	return map[string]any{
		"controller":  map[string]any{"metadata": map[string]any{"name": "service-per-object"}},
		"object":      obj,
		"attachments": map[string]any{"Service.v1": services},
		"related":     map[string]any{},
		"finalizing":  finalizing,
	}
}
