package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"metascript.dev/metascript/test/enginetest"
)

// TestMapRetryAfterDefersOneInput: a map webhook answering 429 with Retry-After for one input
// defers that input alone: its calls come two seconds apart, while another input of the same
// parent is mapped, and mapped again at once when it changes; the parent says which input
// waits (Mapped=False, MapDeferred) with no HookFailed Warning; once the webhook answers, the
// deferred input's output is written.
func TestMapRetryAfterDefersOneInput(t *testing.T) {
	var busyCalls arrivals
	var busy atomic.Bool
	busy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Parent struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"parent"`
			Input struct {
				Metadata struct{ Name string } `json:"metadata"`
				Data     map[string]string     `json:"data"`
			} `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.Input.Metadata.Name == "busy" && busy.Load() {
			busyCalls.add()
			w.Header().Set("Retry-After", "2")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": []any{map[string]any{
			"apiVersion": bundleAPI, "kind": "Copy",
			"metadata": map[string]any{"name": req.Parent.Metadata.Name + "-" + req.Input.Metadata.Name + "-0"},
			"spec":     map[string]any{"value": req.Input.Data["value"]},
		}}})
	}))
	defer srv.Close()
	controller(t, "map-webhook-retry.yaml", "WEBHOOK_URL", srv.URL)
	ns := env.Namespace(t)
	input(t, ns, "busy", "r", map[string]any{"value": "1"})
	calm := input(t, ns, "calm", "r", map[string]any{"value": "1"})
	bundle(t, ns, "p", "map-retry", "r")
	waitCopy(t, ns, "p-calm-0", "1")
	env.Patch(t, calm, `{"data":{"value":"2"}}`)
	waitCopy(t, ns, "p-calm-0", "2") // the parent is not held back by the deferred input

	busyCalls.waitSpaced(t, 3, "for the busy input")
	b := getBundle(t, ns, "p")
	if reason, msg := conditionReason(b, "Mapped"), conditionMessage(b, "Mapped"); reason != "MapDeferred" || !strings.Contains(msg, "ConfigMap "+ns+"/busy") {
		t.Fatalf("Mapped reason %q message %q: want MapDeferred naming the busy input", reason, msg)
	}
	if ev := env.Events(t, ns, "p"); len(ev["HookFailed"]) > 0 || len(ev["HookBackoff"]) == 0 {
		t.Fatalf("want HookBackoff Events and no HookFailed Warning for a 429 with Retry-After: %v", ev)
	}
	if getCopy(t, ns, "p-busy-0") != nil {
		t.Fatal("the deferred input has an output")
	}
	busy.Store(false)
	waitCopy(t, ns, "p-busy-0", "1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		b := getBundle(t, ns, "p")
		return conditionReason(b, "Mapped") == "Mapped", fmt.Sprintf("status %v", b.Object["status"])
	})
}
