package configmappropagation

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/scripting"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

// TestHooksAgree runs both controllers' hooks offline through a life cycle of the sample —
// customized, copied, converged, source edited while a namespace is being deleted, someone
// else's ConfigMap gone, source deleted, then finalized step by step — feeding each step the
// copies the previous one asked for, and compares every response with the same golden file:
// the two languages must give byte-identical answers.
func TestHooksAgree(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			h := newHooks(t, l)
			prop := sample(t)

			h.call("1-customize-names-and-selector", "customize", map[string]any{"controller": controllerObject, "parent": prop})
			bySelector := exampletest.JSONShape(t, prop)
			delete(bySelector["spec"].(map[string]any), "targetNamespaces")
			h.call("2-customize-selector-only", "customize", map[string]any{"controller": controllerObject, "parent": bySelector})

			// What the rules select: the source and every ConfigMap of its name (here someone
			// else's, in team-d, and the copies observed), the labelled namespaces (the
			// source's own among them) and the named one.
			source := configMap("config", map[string]any{"log-level": "info", "feature-flags": "search,export"})
			theirs := configMap("team-d", map[string]any{"log-level": "trace"})
			nss := []map[string]any{namespace("config", true), namespace("team-a", true), namespace("team-b", true),
				namespace("team-c", false), namespace("team-d", true)}
			created := h.call("3-sync-nothing-observed", "sync", syncRequest(prop, source, theirs, nss, nil, false))
			converged := h.call("4-sync-all-observed", "sync", syncRequest(prop, source, theirs, nss, created["children"], false))

			// The source edited (a key changed, binary data added) while team-b is being
			// deleted: the copies left follow, team-b's goes.
			edited := configMap("config", map[string]any{"log-level": "debug", "feature-flags": "search,export"})
			edited["binaryData"] = map[string]any{"logo.png": "iVBORw0KGgo="}
			terminating := exampletest.JSONShape(t, nss[2])
			terminating["metadata"].(map[string]any)["deletionTimestamp"] = "2025-05-01T12:00:00Z"
			deleting := []map[string]any{nss[0], nss[1], terminating, nss[3], nss[4]}
			h.call("5-sync-source-edited-namespace-deleting", "sync", syncRequest(prop, edited, theirs, deleting, converged["children"], false))

			// Their ConfigMap deleted: team-d gets a copy too.
			h.call("6-sync-theirs-deleted", "sync", syncRequest(prop, source, nil, nss, converged["children"], false))

			// The source deleted: no copy is wanted any more.
			h.call("7-sync-source-gone", "sync", syncRequest(prop, nil, theirs, nss, converged["children"], false))

			prop["metadata"].(map[string]any)["deletionTimestamp"] = "2025-05-01T12:00:00Z"
			h.call("8-finalize-copies-observed", "finalize", syncRequest(prop, source, theirs, nss, converged["children"], true))
			h.call("9-finalize-nothing-left", "finalize", syncRequest(prop, source, theirs, nss, nil, true))
		})
	}
}

var controllerObject = map[string]any{"metadata": map[string]any{"name": "configmap-propagation"}}

// clock is the only time offline hooks see.
func clock() time.Time { return time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC) }

// hooks calls one language's shared script offline and checks each response against the
// golden file of its step. (exampletest.Hooks reads DecoratorControllers only.)
type hooks struct {
	t    *testing.T
	lang scripting.Language
	prog scripting.Program
}

func newHooks(t *testing.T, l exampletest.Language) *hooks {
	t.Helper()
	rt := engine.NewRuntime(scripting.Options{Now: clock})
	exampletest.RequireSupport(t, rt, l.Lang, "k8s")
	cc := exampletest.FromFile(t, l.File, "CompositeController")
	src, _, _ := unstructured.NestedString(cc, "spec", "script", string(l.Lang), "source")
	if src == "" {
		t.Fatalf("%s has no spec.script.%s.source", l.File, l.Lang)
	}
	prog, err := rt.Compile(l.Lang, l.File, src)
	if err != nil {
		t.Fatalf("compiling %s: %v", l.File, err)
	}
	return &hooks{t: t, lang: l.Lang, prog: prog}
}

// call calls function with req, compares the response with testdata/hooks/<step>.json
// (rewriting it from Starlark on -update), and returns it in the JSON shape the engine reads.
func (h *hooks) call(step, function string, req map[string]any) map[string]any {
	t := h.t
	t.Helper()
	out, err := h.prog.Call(context.Background(), scripting.Invocation{Function: function, Request: req, Now: clock})
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	resp := exampletest.JSONShape(t, out)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(resp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "hooks", step+".json")
	if *update && h.lang == scripting.Starlark {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestHooksAgree -update to write it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s: %s response differs from %s:\n--- got\n%s\n--- want\n%s", step, h.lang, path, buf.Bytes(), want)
	}
	return resp
}

// sample is the sample's ConfigMapPropagation as the API server would hand it to the engine.
func sample(t *testing.T) map[string]any {
	t.Helper()
	prop := exampletest.FromFile(t, "sample.yaml", "ConfigMapPropagation")
	md := prop["metadata"].(map[string]any)
	md["uid"], md["generation"] = "5a3e0c1e-0000-4000-8000-000000000004", int64(1)
	return prop
}

// configMap is a ConfigMap named as the sample's source, in ns.
func configMap(ns string, data map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": ns, "uid": "uid-of-" + ns}, "data": data}
}

func namespace(name string, labelled bool) map[string]any {
	md := map[string]any{"name": name, "labels": map[string]any{"kubernetes.io/metadata.name": name}}
	if labelled {
		md["labels"].(map[string]any)["propagate-settings"] = "true"
	}
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md,
		"spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
}

// syncRequest is the sync or finalize request for prop with desired (a response's children
// list) observed as the engine writes children: controlled by prop and labelled with its UID.
// Related are source and theirs (either nil: absent), the observed copies, which have the
// source's name too, and the namespaces nss. The parent is cluster-scoped, so both children
// and related ConfigMaps are keyed "namespace/name".
func syncRequest(prop, source, theirs map[string]any, nss []map[string]any, desired any, finalizing bool) map[string]any {
	pmd := prop["metadata"].(map[string]any)
	copies, named := map[string]any{}, map[string]any{}
	list, _ := desired.([]any)
	for _, d := range list {
		c := runtime.DeepCopyJSONValue(d).(map[string]any)
		md := c["metadata"].(map[string]any)
		md["labels"] = map[string]any{"metascript.dev/controller-uid": pmd["uid"]}
		md["ownerReferences"] = []any{map[string]any{"apiVersion": prop["apiVersion"], "kind": prop["kind"],
			"name": pmd["name"], "uid": pmd["uid"], "controller": true, "blockOwnerDeletion": true}}
		key := md["namespace"].(string) + "/" + md["name"].(string)
		copies[key], named[key] = c, c
	}
	for _, cm := range []map[string]any{source, theirs} {
		if cm != nil {
			md := cm["metadata"].(map[string]any)
			named[md["namespace"].(string)+"/"+md["name"].(string)] = cm
		}
	}
	namespaces := map[string]any{}
	for _, ns := range nss {
		namespaces[ns["metadata"].(map[string]any)["name"].(string)] = ns
	}
	return map[string]any{
		"controller": controllerObject,
		"parent":     prop,
		"children":   map[string]any{"ConfigMap.v1": copies},
		"related":    map[string]any{"ConfigMap.v1": named, "Namespace.v1": namespaces},
		"finalizing": finalizing,
	}
}
