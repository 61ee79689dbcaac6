package integration

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
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
