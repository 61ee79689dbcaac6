package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/test/enginetest"
)

// TestWebhookHooks: the same protocol over HTTP, as a Metacontroller user would run it.
func TestWebhookHooks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Parent struct {
				Metadata struct{ Name string } `json:"metadata"`
				Spec     struct {
					Selector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
					Items []struct{ Name, Value string } `json:"items"`
				} `json:"spec"`
			} `json:"parent"`
			Children map[string]map[string]any `json:"children"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var children []any
		for _, it := range req.Parent.Spec.Items {
			children = append(children, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": req.Parent.Metadata.Name + "-" + it.Name, "labels": req.Parent.Spec.Selector.MatchLabels},
				"data":     map[string]any{"value": it.Value},
			})
		}
		json.NewEncoder(w).Encode(map[string]any{
			"children": children,
			"status":   map[string]any{"seen": len(req.Children["ConfigMap.v1"])},
		})
	}))
	defer srv.Close()
	controller(t, "webhook.yaml", "WEBHOOK_URL", srv.URL)
	ns := env.Namespace(t)
	b := bundle(t, ns, "w", "webhook", "w", "a=1")
	waitValue(t, ns, "w-a", "1")
	env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"2"}]}}`)
	waitValue(t, ns, "w-a", "2")
}

// TestWebhookTimeout: which limit bounds a webhook call (docs/webhooks.md): the webhook's
// own timeout when set, else the hook's budget.timeout, else 10 seconds — not the engine's
// default hook timeout, 2 seconds in these tests. The endpoint answers after a delay; a call
// that outlives its limit fails with a HookFailed Event and writes nothing.
func TestWebhookTimeout(t *testing.T) {
	for _, tc := range []struct {
		name           string
		webhookTimeout string // appended to the webhook's fields
		budget         string // the hook's budget field
		delay          time.Duration
		wantTimeout    bool
	}{
		{"webhook-timeout", ", timeout: 500ms", "", 1500 * time.Millisecond, true},
		{"budget-timeout", "", "budget: {timeout: 500ms}", 1500 * time.Millisecond, true},
		{"webhook-timeout-over-budget", ", timeout: 5s", "budget: {timeout: 500ms}", 1500 * time.Millisecond, false},
		{"default-10s", "", "", 2500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(tc.delay):
					syncBundle(w, r)
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			name := "timeout-" + tc.name
			controller(t, "webhook-timeout.yaml", "NAME", name, "WEBHOOK_URL", srv.URL,
				"WEBHOOK_TIMEOUT", tc.webhookTimeout, "BUDGET", tc.budget)
			waitControllerReady(t, "CompositeController", name)
			ns := env.Namespace(t)
			if !tc.wantTimeout {
				bundle(t, ns, "w", name, "w", "a=1")
				waitValue(t, ns, "w-a", "1")
				return
			}
			failedAfter(t, "compositecontroller/"+name, func() { bundle(t, ns, "w", name, "w", "a=1") })
			enginetest.Eventually(t, wait, func() (bool, string) {
				ev := env.Events(t, ns, "w")
				for _, m := range ev["HookFailed"] {
					if strings.Contains(m, "context deadline exceeded") {
						return true, ""
					}
				}
				return false, fmt.Sprintf("no HookFailed event for a timeout; events %v", ev)
			})
			if cm := configMap(t, ns, "w-a"); cm != nil {
				t.Fatalf("a child was written although the hook timed out: %v", cm.Object)
			}
		})
	}
}
