package tenantpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/test/enginetest"
)

// secret is what the services a tenant must not read answer with.
const secret = "SECRET-of-another-service"

// secretAnswer is a 200 JSON answer a sync hook would take: the secret in the parent's status.
const secretAnswer = `{"status":{"stolen":"` + secret + `"},"children":[]}`

// server serves h on a listener of host ("127.0.0.1" allowed, "127.0.0.2" refused, or
// a listener given), counting its requests.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

func serve(t *testing.T, ln net.Listener, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func listen(t *testing.T, host string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func answer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func webhookHook(url string) string { return fmt.Sprintf("webhook: {url: %q, timeout: 5s}", url) }

// TestTenantWebhookPolicy: a namespaced controller's webhook pointed at what the policy
// refuses, or answering with what the tenant must not read, fails with a HookFailed Event
// that names the status or the refusal and holds nothing of the answer; nothing reaches the
// parent's status.
func TestTenantWebhookPolicy(t *testing.T) {
	ns := tenantNamespace(t)
	allowedTarget := serve(t, listen(t, "127.0.0.1"), answer(http.StatusOK, secretAnswer))
	for _, tc := range []struct {
		name   string
		srv    *server
		want   func(srv *server) string // in the HookFailed Event
		called bool                     // whether the webhook's server is reached
	}{
		{"loopback", serve(t, listen(t, "127.0.0.2"), answer(http.StatusOK, secretAnswer)), func(s *server) string {
			return fmt.Sprintf("webhook %s: egress to %s is refused by the engine's tenant webhook policy (--tenant-webhook-allow): 127.0.0.0/8 is loopback",
				s.URL, s.Listener.Addr())
		}, false},
		{"engine-port", serve(t, enginePort, answer(http.StatusOK, secretAnswer)), func(s *server) string {
			return fmt.Sprintf("egress to %s is refused by the engine's tenant webhook policy (--tenant-webhook-allow): port %d is the engine's own",
				s.Listener.Addr(), s.Listener.Addr().(*net.TCPAddr).Port)
		}, false},
		{"redirect", serve(t, listen(t, "127.0.0.1"), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, allowedTarget.URL+"/"+secret, http.StatusTemporaryRedirect)
		}), func(s *server) string {
			return fmt.Sprintf("webhook %s: HTTP 307: Temporary Redirect (a tenant's webhook follows no redirect)", s.URL)
		}, true},
		{"error-body", serve(t, listen(t, "127.0.0.1"), answer(http.StatusInternalServerError, "internal: "+secret)), func(s *server) string {
			return fmt.Sprintf("webhook %s: HTTP 500: Internal Server Error (the body is not shown for a tenant's webhook: see the webhook's own logs)", s.URL)
		}, true},
		{"not-json", serve(t, listen(t, "127.0.0.1"), answer(http.StatusOK, secret)), func(s *server) string {
			return fmt.Sprintf("webhook %s: HTTP 200: decoding response: not JSON: syntax error at byte 1 of %d", s.URL, len(secret))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			namespacedController(t, ns, tc.name, "", webhookHook(tc.srv.URL))
			widget(t, ns, tc.name, tc.name, "x")
			env.WaitEvent(t, wait, ns, tc.name, "HookFailed", tc.want(tc.srv))
			if called := tc.srv.hits.Load() > 0; called != tc.called {
				t.Errorf("the webhook's server was called: %v, want %v", called, tc.called)
			}
			noSecretIn(t, ns, tc.name)
		})
	}
	if n := allowedTarget.hits.Load(); n != 0 {
		t.Errorf("the redirect was followed: its target got %d requests", n)
	}

	// The policy refuses what it should only: an allowed webhook answering well works, and a
	// cluster-scoped controller's webhook reaches a loopback address as before.
	good := serve(t, listen(t, "127.0.0.1"), childAnswer)
	namespacedController(t, ns, "allowed", "", webhookHook(good.URL))
	widget(t, ns, "allowed", "allowed", "from-an-allowed-webhook")
	trusted := serve(t, listen(t, "127.0.0.2"), childAnswer)
	cc := env.Create(t, "", enginetest.Object(t, fmt.Sprintf(`{"apiVersion":"metascript.dev/v1alpha1","kind":"CompositeController",
		"metadata":{"name":"trusted-webhook"},"spec":{"parentResource":{"apiVersion":%q,"resource":"widgets","labelSelector":{"matchLabels":{"suite":"trusted"}}},
		"childResources":[{"apiVersion":"v1","resource":"configmaps"}],"hooks":{"sync":{"webhook":{"url":%q,"timeout":"5s"}}}}}`, widgetAPI, trusted.URL)))
	t.Cleanup(func() { env.Delete(t, cc) })
	widget(t, ns, "trusted", "trusted", "from-a-trusted-webhook")
	enginetest.Eventually(t, wait, func() (bool, string) {
		a, b := childValue(t, ns, "allowed"), childValue(t, ns, "trusted")
		return a == "from-an-allowed-webhook" && b == "from-a-trusted-webhook", fmt.Sprintf("children %q, %q", a, b)
	})
}

// childAnswer is a sync webhook making the child a Widget asks for.
func childAnswer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Parent struct {
			Metadata struct{ Name string }
			Spec     struct{ Value string }
		}
	}
	if err := jsonDecode(r, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, `{"children":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"widget":%q}},"data":{"value":%q}}]}`,
		req.Parent.Metadata.Name+"-child", req.Parent.Metadata.Name, req.Parent.Spec.Value)
}

func jsonDecode(r *http.Request, into any) error { return json.NewDecoder(r.Body).Decode(into) }

// noSecretIn fails the test if an Event of ns, or Widget name's status, holds the secret.
func noSecretIn(t *testing.T, ns, name string) {
	t.Helper()
	events, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Message, secret) {
			t.Errorf("Event %s %s holds the answer: %s", ev.Reason, ev.InvolvedObject.Name, ev.Message)
		}
	}
	w := env.Get(t, widgetAPI, "Widget", ns, name)
	if st, _, _ := unstructured.NestedMap(w.Object, "status"); strings.Contains(fmt.Sprint(st), secret) {
		t.Errorf("the Widget's status holds the answer: %v", st)
	}
}
