package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/enginetest"
)

// TestFanoutSyncMatchesHook keeps the Metacontroller phase honest: its webhook must answer
// what the engine's inline hook (testdata/controller.yaml) answers for the same parent. The
// first request is shaped as Metacontroller sends it (controller, children, related); the
// others ask for 0 and 2 children.
func TestFanoutSyncMatchesHook(t *testing.T) {
	cc := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "controller.yaml"))[0]
	src, _, err := unstructured.NestedString(cc.Object, "spec", "hooks", "sync", "starlark", "source")
	if err != nil || src == "" {
		t.Fatalf("testdata/controller.yaml: no spec.hooks.sync.starlark.source (%v)", err)
	}
	prog, err := engine.NewRuntime(scripting.Options{}).Compile(scripting.Starlark, "controller.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join("testdata", "metacontroller-sync.json"))
	if err != nil {
		t.Fatal(err)
	}
	bodies := [][]byte{first}
	for _, n := range []int{0, 2} {
		body, err := json.Marshal(map[string]any{"parent": enginetest.Fanout(parentName(n), n).Object})
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	srv := startHookServer()
	defer srv.Close()
	for i, body := range bodies {
		// The inline hook gets the parent as the engine passes it: integers as int64.
		var req struct{ Parent json.RawMessage }
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		parent := &unstructured.Unstructured{}
		if err := parent.UnmarshalJSON(req.Parent); err != nil {
			t.Fatal(err)
		}
		want, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync",
			Request: map[string]any{"parent": parent.Object}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s %v: %s", i, resp.Status, err, got)
		}
		if g, w := canonicalJSON(t, json.RawMessage(got)), canonicalJSON(t, want); g != w {
			t.Errorf("request %d: the webhook answers\n%s\nthe inline hook\n%s", i, g, w)
		}
	}
	if n := srv.calls.Load(); n != int64(len(bodies)) {
		t.Errorf("the server counted %d calls, want %d", n, len(bodies))
	}
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader([]byte("{")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a truncated request: %s, want 400 Bad Request", resp.Status)
	}
}

// canonicalJSON is v as JSON with object keys sorted and every number a float64.
func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
