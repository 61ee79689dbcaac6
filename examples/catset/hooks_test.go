package catset

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/scripting"
)

var update = flag.Bool("update", false, "rewrite testdata/hooks/*.json from the Starlark controller")

const (
	exampleAPI = "examples.metascript.dev/v1alpha1"
	catsKey    = "Cat." + exampleAPI
	claimsKey  = "PersistentVolumeClaim.v1"
)

// stdlibModules are the stdlib modules the hooks use.
var stdlibModules = []string{"k8s", "re"}

// TestHooksAgree runs both controllers' hooks offline through a CatSet's life, playing the
// engine and the kubelet between steps: Cats come up one at a time as each turns Ready; a new
// template, asked about once per revision while web-2 is being recreated; a scale-down in
// the middle of that rollout; then, the CatSet deleted, the teardown step by step. Each step
// checks the children asked for and compares the whole response with one golden file: both
// languages must answer byte for byte alike.
func TestHooksAgree(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			h := newHooks(t, l)
			v1 := sample(t)
			c := cluster{}

			// Ordered creation: web-n only once web-0 to web-(n-1) are Ready.
			c.apply(h.sync("01-sync-nothing-observed", request(v1, c, false), "web-0", "www-web-0"))
			h.sync("02-sync-web-0-not-ready", request(v1, c, false), "web-0", "www-web-0")
			c.ready("web-0")
			c.apply(h.sync("03-sync-web-0-ready", request(v1, c, false), "web-1", "web-0", "www-web-0", "www-web-1"))
			c.ready("web-1")
			c.apply(h.sync("04-sync-web-1-ready", request(v1, c, false), "web-2", "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2"))
			c.ready("web-2")
			steady := h.sync("05-sync-all-ready", request(v1, c, false), "web-2", "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2")
			checkStatus(t, "05-sync-all-ready", steady, 3, 3)
			converged := c.clone()

			// A new template: the engine has moved web-2 to the new revision and deleted it,
			// and asks once as the new revision (which creates web-2 anew) and once as the old
			// one (which drives web-1 and web-0 until their turn).
			v2 := withImage(t, v1, "nginx:1.28")
			delete(c, "web-2")
			fresh := h.sync("06-sync-new-revision-web-2-recreated", request(v2, c, false), "web-2", "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2")
			h.sync("07-sync-old-revision", request(v1, c, false), "web-2", "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2")
			checkImages(t, "06-sync-new-revision-web-2-recreated", fresh, "nginx:1.28")
			c.apply(fresh)

			// Scaling is not rolled: down to 2 while web-2 is not Ready yet, web-2 goes at once
			// (web-0 and web-1 are Ready) and its claim stays.
			scaled := jsonShape(t, v2)
			scaled["spec"].(map[string]any)["replicas"] = int64(2)
			down := h.sync("08-sync-scaled-down", request(scaled, c, false), "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2")
			checkStatus(t, "08-sync-scaled-down", down, 3, 2)

			// Teardown, from the converged CatSet: highest ordinal first, each Cat once the one
			// above it is gone, Cats as they are, then the claims.
			c = converged
			deleted := jsonShape(t, v1)
			deleted["metadata"].(map[string]any)["deletionTimestamp"] = "2025-05-01T12:00:00Z"
			deleted["status"] = map[string]any{"conditions": []any{map[string]any{
				"type": "RolledOut", "status": "True", "reason": "RolledOut", "message": "every child is on revision web-de3602c5fe"}}}
			first := h.finalize("09-finalize-all-observed", request(deleted, c, true), false, "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2")
			checkStatus(t, "09-finalize-all-observed", first, 3, 3)
			c.terminate("web-2")
			held := h.finalize("10-finalize-web-2-terminating", request(deleted, c, true), false, "web-1", "web-0", "www-web-0", "www-web-1", "www-web-2")
			checkStatus(t, "10-finalize-web-2-terminating", held, 2, 2)
			for _, name := range []string{"web-2", "web-1", "web-0"} {
				delete(c, name)
			}
			c.apply(h.finalize("11-finalize-cats-gone", request(deleted, c, true), false))
			h.finalize("12-finalize-nothing-left", request(deleted, c, true), true)
		})
	}
}

// hooks calls one language's shared script offline, with the clock fixed.
type hooks struct {
	t    *testing.T
	lang scripting.Language
	prog scripting.Program
}

// newHooks compiles spec.script of the language's controller; it fails the test when the
// runtime lacks the language or the stdlib modules the script uses.
func newHooks(t *testing.T, l exampletest.Language) *hooks {
	t.Helper()
	rt := engine.NewRuntime(scripting.Options{Now: clock})
	exampletest.RequireSupport(t, rt, l.Lang, stdlibModules...)
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

func clock() time.Time { return time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC) }

// sync calls sync, checks the children it asks for by name, in order, and the golden file.
func (h *hooks) sync(step string, req map[string]any, want ...string) map[string]any {
	h.t.Helper()
	return h.call(step, "sync", req, want)
}

// finalize calls finalize and checks its children and finalized.
func (h *hooks) finalize(step string, req map[string]any, finalized bool, want ...string) map[string]any {
	h.t.Helper()
	resp := h.call(step, "finalize", req, want)
	if resp["finalized"] != finalized {
		h.t.Errorf("%s: finalized = %v, want %v", step, resp["finalized"], finalized)
	}
	return resp
}

func (h *hooks) call(step, function string, req map[string]any, want []string) map[string]any {
	h.t.Helper()
	out, err := h.prog.Call(context.Background(), scripting.Invocation{Function: function, Request: req, Now: clock})
	if err != nil {
		h.t.Fatalf("%s: %v", step, err)
	}
	resp := jsonShape(h.t, out)
	var got []string
	for _, c := range children(resp) {
		got = append(got, c["metadata"].(map[string]any)["name"].(string))
	}
	if !slices.Equal(got, want) {
		h.t.Errorf("%s: children %v, want %v", step, got, want)
	}
	h.golden(step, resp)
	return resp
}

// golden compares resp with testdata/hooks/<step>.json, rewriting it from Starlark on -update.
func (h *hooks) golden(step string, resp map[string]any) {
	t := h.t
	t.Helper()
	path := filepath.Join("testdata", "hooks", step+".json")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(resp); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	if *update && h.lang == scripting.Starlark {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestHooksAgree -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %s response differs from %s:\n--- got\n%s\n--- want\n%s", step, h.lang, path, got, want)
	}
}

// cluster is what the API server holds of the CatSet's children, by name.
type cluster map[string]map[string]any

// apply plays the engine: the children a response asks for that do not exist yet are
// created, as the API server stores them (not Ready: nothing has said so), and those it no
// longer asks for are deleted. Existing children are left as they are: Cats roll and claims
// are never updated.
func (c cluster) apply(resp map[string]any) {
	asked := map[string]bool{}
	for _, child := range children(resp) {
		md := child["metadata"].(map[string]any)
		name := md["name"].(string)
		asked[name] = true
		if _, ok := c[name]; ok {
			continue
		}
		obj := maps.Clone(child)
		stored := maps.Clone(md)
		stored["namespace"], stored["uid"] = "default", "uid-"+name
		stored["annotations"] = map[string]any{"metascript.dev/applied-hash": "h-" + name}
		obj["metadata"] = stored
		if obj["kind"] == "PersistentVolumeClaim" {
			obj["status"] = map[string]any{"phase": "Pending"}
		}
		c[name] = obj
	}
	for name := range c {
		if !asked[name] {
			delete(c, name)
		}
	}
}

// ready plays the kubelet: Cat name is Ready.
func (c cluster) ready(name string) {
	c[name]["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
}

// terminate marks Cat name as being deleted (a finalizer holds it).
func (c cluster) terminate(name string) {
	md := maps.Clone(c[name]["metadata"].(map[string]any))
	md["deletionTimestamp"] = "2025-05-01T12:00:01Z"
	c[name]["metadata"] = md
}

func (c cluster) clone() cluster {
	out := cluster{}
	for name, obj := range c {
		out[name] = maps.Clone(obj)
	}
	return out
}

// request is the sync or finalize request for catset with the cluster's children.
func request(catset map[string]any, c cluster, finalizing bool) map[string]any {
	cats, claims := map[string]any{}, map[string]any{}
	for name, obj := range c {
		if obj["kind"] == "Cat" {
			cats[name] = obj
		} else {
			claims[name] = obj
		}
	}
	return map[string]any{
		"controller": map[string]any{"metadata": map[string]any{"name": "catset"}},
		"parent":     catset,
		"children":   map[string]any{catsKey: cats, claimsKey: claims},
		"related":    map[string]any{},
		"finalizing": finalizing,
	}
}

// sample is the sample CatSet as the API server would hand it to the engine.
func sample(t *testing.T) map[string]any {
	t.Helper()
	obj := exampletest.FromFile(t, "sample.yaml", "CatSet")
	md := obj["metadata"].(map[string]any)
	md["namespace"], md["uid"], md["generation"] = "default", "5a3e0c1e-0000-4000-8000-000000000003", int64(1)
	return obj
}

// withImage is catset with another template image: its next generation.
func withImage(t *testing.T, catset map[string]any, image string) map[string]any {
	t.Helper()
	out := jsonShape(t, catset)
	out["metadata"].(map[string]any)["generation"] = int64(2)
	out["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["image"] = image
	return out
}

func children(resp map[string]any) []map[string]any {
	list, _ := resp["children"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, c := range list {
		out = append(out, c.(map[string]any))
	}
	return out
}

func checkStatus(t *testing.T, step string, resp map[string]any, replicas, ready int64) {
	t.Helper()
	status, _ := resp["status"].(map[string]any)
	if status["replicas"] != replicas || status["readyReplicas"] != ready {
		t.Errorf("%s: status %v, want replicas %d, readyReplicas %d", step, status, replicas, ready)
	}
}

// checkImages checks that every Cat a response asks for has the image.
func checkImages(t *testing.T, step string, resp map[string]any, image string) {
	t.Helper()
	for _, c := range children(resp) {
		if c["kind"] != "Cat" {
			continue
		}
		if got, _, _ := unstructured.NestedString(c, "spec", "image"); got != image {
			t.Errorf("%s: %s has image %q, want %q", step, c["metadata"].(map[string]any)["name"], got, image)
		}
	}
}

func jsonShape(t *testing.T, v any) map[string]any { return exampletest.JSONShape(t, v) }
