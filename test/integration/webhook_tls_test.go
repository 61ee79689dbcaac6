package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
	"metascript.dev/metascript/test/tlstest"
)

// syncBundle answers a Bundle's sync request as the other suites' hooks do: one ConfigMap
// per item, and status.seen counting the ConfigMaps observed.
func syncBundle(w http.ResponseWriter, r *http.Request) {
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
	children := []any{}
	for _, it := range req.Parent.Spec.Items {
		children = append(children, map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": req.Parent.Metadata.Name + "-" + it.Name, "labels": req.Parent.Spec.Selector.MatchLabels},
			"data":     map[string]any{"value": it.Value},
		})
	}
	json.NewEncoder(w).Encode(map[string]any{"children": children, "status": map[string]any{"seen": len(req.Children["ConfigMap.v1"])}})
}

// tlsHook serves syncBundle over HTTPS with a certificate of a CA made for the test, to
// requests bearing `Authorization: Bearer <token>`; others get 401. It returns the server and
// the CA's PEM.
func tlsHook(t *testing.T, token string) (*httptest.Server, string) {
	t.Helper()
	srv, ca := tlstest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		syncBundle(w, r)
	}))
	return srv, string(ca)
}

// tlsController creates the CA ConfigMap and token Secret in ns, and the controller of
// webhook-tls.yaml calling srv.
func tlsController(t *testing.T, name, ns string, srv *httptest.Server, caPEM, token string) {
	t.Helper()
	env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "webhook-ca"}, "data": map[string]any{"ca.crt": caPEM}}})
	env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "webhook-token"}, "stringData": map[string]any{"token": token + "\n"}}})
	u, _ := url.Parse(srv.URL)
	controller(t, "webhook-tls.yaml", "CONTROLLER_NAME", name, "SECRETS_NAMESPACE", ns,
		"WEBHOOK_HOST", u.Host, "WEBHOOK_URL", srv.URL)
}

// TestWebhookTLSAndBearerTokenFromEndpointConfig: a webhook served over HTTPS by a private
// CA, trusting it and authenticating through the controller's endpointConfigs, converges.
func TestWebhookTLSAndBearerTokenFromEndpointConfig(t *testing.T) {
	srv, caPEM := tlsHook(t, "good-token")
	ns := env.Namespace(t)
	tlsController(t, "webhook-tls", ns, srv, caPEM, "good-token")
	b := bundle(t, ns, "t", "webhook-tls", "t", "a=1", "b=2")
	waitValue(t, ns, "t-a", "1")
	waitValue(t, ns, "t-b", "2")
	env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"3"}]}}`)
	waitValue(t, ns, "t-a", "3")
	waitGone(t, ns, "t-b")
}

// TestWebhookWrongTokenWritesNothing: the endpoint refuses the token with 401; the parent
// gets a Warning Event saying so, and neither a child nor its status is written.
func TestWebhookWrongTokenWritesNothing(t *testing.T) {
	srv, caPEM := tlsHook(t, "good-token")
	ns := env.Namespace(t)
	tlsController(t, "webhook-tls-refused", ns, srv, caPEM, "stale-token")
	bundle(t, ns, "r", "webhook-tls-refused", "r", "a=1")
	env.WaitEvent(t, wait, ns, "r", "HookFailed", "HTTP 401", "credentials", "bad token")
	if cm := configMap(t, ns, "r-a"); cm != nil {
		t.Fatalf("a child was written although the hook was refused: %v", cm.Object)
	}
	if st, ok := getBundle(t, ns, "r").Object["status"]; ok {
		t.Fatalf("the parent's status was written although the hook was refused: %v", st)
	}
}

// TestWebhookMissingSecret: a token Secret that does not exist leaves the controller
// Ready=False with reason ReferenceNotFound; creating it lets the controller start.
func TestWebhookMissingSecret(t *testing.T) {
	srv, caPEM := tlsHook(t, "good-token")
	ns := env.Namespace(t)
	u, _ := url.Parse(srv.URL)
	env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "webhook-ca"}, "data": map[string]any{"ca.crt": caPEM}}})
	controller(t, "webhook-tls.yaml", "CONTROLLER_NAME", "webhook-tls-missing", "SECRETS_NAMESPACE", ns,
		"WEBHOOK_HOST", u.Host, "WEBHOOK_URL", srv.URL)
	enginetest.Eventually(t, wait, func() (bool, string) {
		cc := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", "webhook-tls-missing")
		msg := conditionMessage(cc, "Ready")
		return enginetest.Condition(cc, "Ready") == "False" && conditionReason(cc, "Ready") == "ReferenceNotFound" &&
				strings.Contains(msg, "endpointConfigs[1].authorization: Secret "+ns+"/webhook-token"),
			fmt.Sprintf("status %v", cc.Object["status"])
	})
	env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "webhook-token"}, "stringData": map[string]any{"token": "good-token"}}})
	bundle(t, ns, "m", "webhook-tls-missing", "m", "a=1")
	waitValue(t, ns, "m-a", "1")
}
