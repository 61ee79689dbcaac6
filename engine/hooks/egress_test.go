package hooks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"metascript.dev/metascript/apis/v1alpha1"
)

func TestEgressCheck(t *testing.T) {
	nets := func(s ...string) []netip.Prefix {
		n, _, err := ParseEgressAllow(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	local := []netip.Addr{netip.MustParseAddr("10.0.0.5")}
	for _, tc := range []struct {
		name   string
		policy *Egress
		host   string
		addr   string
		want   string // "" allowed, else a part of the refusal
	}{
		{"default: loopback", &Egress{}, "127.0.0.1", "127.0.0.1:8080", "127.0.0.0/8 is loopback"},
		{"default: another loopback address", &Egress{}, "x", "127.9.9.9:80", "127.0.0.0/8 is loopback"},
		{"default: IPv6 loopback", &Egress{}, "::1", "[::1]:80", "::1/128 is loopback"},
		{"default: IPv4-mapped loopback", &Egress{}, "x", "[::ffff:127.0.0.1]:80", "127.0.0.0/8 is loopback"},
		{"default: cloud metadata", &Egress{}, "169.254.169.254", "169.254.169.254:80", "169.254.0.0/16 is link-local"},
		{"default: IPv6 link-local with a zone", &Egress{}, "x", "[fe80::1%eth0]:80", "fe80::/10 is link-local"},
		{"default: IPv6 cloud metadata", &Egress{}, "x", "[fd00:ec2::254]:80", "a cloud metadata service"},
		{"default: unspecified", &Egress{}, "0.0.0.0", "0.0.0.0:80", "0.0.0.0/8 is unspecified"},
		{"default: IPv6 unspecified", &Egress{}, "x", "[::]:80", "::/128 is unspecified"},
		{"default: another address", &Egress{}, "hooks.example.com", "10.1.2.3:443", ""},
		{"default: the engine's port elsewhere", &Egress{EnginePorts: []uint16{9090}, localAddrs: local}, "x", "10.1.2.3:9090", ""},
		{"the engine's port on its own address", &Egress{EnginePorts: []uint16{9090}, localAddrs: local}, "x", "10.0.0.5:9090",
			"port 9090 is the engine's own"},
		{"the engine's port on loopback, loopback allowed", &Egress{Allow: nets("127.0.0.0/8"), EnginePorts: []uint16{9090}, localAddrs: local},
			"localhost", "127.0.0.1:9090", "port 9090 is the engine's own"},
		{"the engine's port on its own address, allowed", &Egress{Allow: nets("10.0.0.0/8"), EnginePorts: []uint16{9090}, localAddrs: local},
			"x", "10.0.0.5:9090", "port 9090 is the engine's own"},
		{"another port of the engine's address", &Egress{EnginePorts: []uint16{9090}, localAddrs: local}, "x", "10.0.0.5:8443", ""},
		{"allowed network", &Egress{Allow: nets("10.0.0.0/8")}, "x", "10.1.2.3:80", ""},
		{"outside the allowed network", &Egress{Allow: nets("10.0.0.0/8")}, "x", "192.168.1.1:80",
			`neither host "x" nor address 192.168.1.1 is allowed`},
		{"allowed address", &Egress{Allow: nets("192.168.1.1")}, "x", "192.168.1.1:80", ""},
		{"an allowed loopback address lifts the refusal", &Egress{Allow: nets("127.0.0.1/32")}, "x", "127.0.0.1:80", ""},
		{"but only for itself", &Egress{Allow: nets("127.0.0.1/32")}, "x", "127.0.0.2:80", "127.0.0.0/8 is loopback"},
		{"the loopback range lifts it", &Egress{Allow: nets("127.0.0.0/8")}, "x", "127.0.0.2:80", ""},
		{"everything does not lift it", &Egress{Allow: nets("0.0.0.0/0")}, "x", "127.0.0.1:80", "127.0.0.0/8 is loopback"},
		{"everything does not lift metadata", &Egress{Allow: nets("0.0.0.0/0")}, "x", "169.254.169.254:80", "link-local"},
		{"everything IPv6 does not lift loopback", &Egress{Allow: nets("::/0")}, "x", "[::1]:80", "::1/128 is loopback"},
		{"metadata named", &Egress{Allow: nets("169.254.169.254")}, "x", "169.254.169.254:80", ""},
		{"allowed host", &Egress{AllowHosts: []string{"hooks.example.com"}}, "Hooks.Example.com.", "192.168.1.1:443", ""},
		{"another host", &Egress{AllowHosts: []string{"hooks.example.com"}}, "evil.example.com", "192.168.1.1:443",
			`neither host "evil.example.com"`},
		{"allowed domain", &Egress{AllowHosts: []string{".example.com"}}, "a.b.example.com", "192.168.1.1:443", ""},
		{"the domain itself is not under it", &Egress{AllowHosts: []string{".example.com"}}, "example.com", "192.168.1.1:443",
			"is allowed"},
		{"a suffix is not a domain", &Egress{AllowHosts: []string{".example.com"}}, "badexample.com", "192.168.1.1:443",
			"is allowed"},
		{"an allowed host resolving to loopback (DNS rebinding)", &Egress{AllowHosts: []string{"hooks.example.com"}},
			"hooks.example.com", "127.0.0.1:443", "127.0.0.0/8 is loopback"},
		{"an allowed host resolving to metadata", &Egress{AllowHosts: []string{".example.com"}},
			"x.example.com", "169.254.169.254:80", "link-local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.Setting = "--tenant-webhook-allow"
			if tc.policy.localAddrs == nil {
				tc.policy.localAddrs = []netip.Addr{}
			}
			err := tc.policy.Check(tc.host, netip.MustParseAddrPort(tc.addr))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("allowed, want refused: %s", tc.want)
			}
			var egress *EgressError
			if !errors.As(err, &egress) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "is refused by the engine's tenant webhook policy (--tenant-webhook-allow)") {
				t.Fatalf("refusal %q (%T), want an *EgressError saying %q", err, err, tc.want)
			}
		})
	}
}

func TestParseEgressAllow(t *testing.T) {
	nets, hosts, err := ParseEgressAllow([]string{" 10.0.0.0/8", "192.168.1.7/24", "10.1.2.3", "::1", "fd00::/8",
		"Hooks.Example.COM", "*.svc.cluster.local", ".example.org.", ""})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(nets); got != "[10.0.0.0/8 192.168.1.0/24 10.1.2.3/32 ::1/128 fd00::/8]" {
		t.Errorf("networks %s", got)
	}
	if got := fmt.Sprint(hosts); got != "[hooks.example.com .svc.cluster.local .example.org]" {
		t.Errorf("hosts %s", got)
	}
	for _, bad := range []string{"https://hooks.example.com", "hooks.example.com:443", "10.0.0.0/33", "-x.example.com", "a..b", "*"} {
		if _, _, err := ParseEgressAllow([]string{bad}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q is neither", bad)) {
			t.Errorf("%q: %v, want refused", bad, err)
		}
	}
}

// tenantWebhook builds a tenant's webhook at url under policy.
func tenantWebhook(t *testing.T, url string, policy *Egress, strict bool) *Webhook {
	t.Helper()
	mode := v1alpha1.ResponseUnMarshallModeLoose
	if strict {
		mode = v1alpha1.ResponseUnMarshallModeStrict
	}
	inv, err := Build(context.Background(), Spec{Controller: "ncc/team-a/x", Hook: "sync",
		Def:            &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &url, ResponseUnMarshallMode: &mode}},
		ResponseFields: []string{"status", "children"}, Tenant: policy}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return inv.(*Webhook)
}

// loopbackPolicy allows the loopback address 127.0.0.1 only, as a platform would allow the
// addresses of its tenants' webhooks: the test servers listen there.
func loopbackPolicy() *Egress {
	return &Egress{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Setting: "--tenant-webhook-allow"}
}

// countingServer answers body to every request, and counts them.
func countingServer(t *testing.T, body string) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestTenantWebhookDialsThroughThePolicy: the policy is applied to the address the name
// resolves to when the connection is made, so a name allowed by the URL reaches no refused
// address; the server is never connected to.
func TestTenantWebhookDialsThroughThePolicy(t *testing.T) {
	srv, hits := countingServer(t, `{"status":{"secret":"of another service"}}`)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, tc := range []struct {
		name, url string
		policy    *Egress
	}{
		{"by address, default policy", srv.URL, &Egress{}},
		{"by a name resolving to loopback, the name allowed", "http://localhost:" + port,
			&Egress{AllowHosts: []string{"localhost"}}},
		{"by address, another loopback address allowed", srv.URL, &Egress{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.Setting = "--tenant-webhook-allow"
			_, err := tenantWebhook(t, tc.url, tc.policy, false).Invoke(context.Background(), map[string]any{}, nil)
			var we *WebhookError
			if !errors.As(err, &we) || !strings.Contains(err.Error(),
				fmt.Sprintf("webhook %s: egress to 127.0.0.1:%s is refused by the engine's tenant webhook policy (--tenant-webhook-allow): 127.0.0.0/8 is loopback", tc.url, port)) {
				t.Fatalf("error %v, want the egress refusal", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was sent %d requests, want none", n)
	}
	// A cluster-scoped controller's webhook (no policy) still reaches it.
	if _, err := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL}}, nil).Invoke(context.Background(), map[string]any{}, nil); err != nil {
		t.Fatalf("a trusted webhook: %v", err)
	}
}

// TestTenantWebhookFollowsNoRedirect: a 3xx answer is a failure naming its status only,
// and where it points is never asked.
func TestTenantWebhookFollowsNoRedirect(t *testing.T) {
	target, reached := countingServer(t, `{"status":{"from":"the target"}}`)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", target.URL+"/internal-path")
				w.WriteHeader(code)
				fmt.Fprint(w, "redirect body")
			}))
			defer redirect.Close()
			_, err := tenantWebhook(t, redirect.URL, loopbackPolicy(), false).Invoke(context.Background(), map[string]any{}, nil)
			want := fmt.Sprintf("webhook %s: HTTP %d: %s (a tenant's webhook follows no redirect)", redirect.URL, code, http.StatusText(code))
			if err == nil || err.Error() != want {
				t.Fatalf("error %v, want %q", err, want)
			}
		})
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect's target was sent %d requests, want none", n)
	}
	// A trusted webhook follows it, as before.
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	if _, err := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &redirect.URL}}, nil).Invoke(context.Background(), map[string]any{}, nil); err != nil {
		t.Fatalf("a trusted webhook: %v", err)
	}
}

// TestTenantWebhookErrorsHoldNoBody: whatever the answer, a tenant's webhook error holds
// nothing of its body; a trusted webhook's still quotes it.
func TestTenantWebhookErrorsHoldNoBody(t *testing.T) {
	const secret = "SECRET-7f3a"
	for _, tc := range []struct {
		name   string
		status int
		body   string
		strict bool
		want   string // what the tenant's error says, after "webhook URL: "
		// trusted is what a trusted webhook's error says instead (it may quote the body).
		trusted string
	}{
		{"500", 500, "internal " + secret, false,
			"HTTP 500: Internal Server Error (the body is not shown for a tenant's webhook: see the webhook's own logs)", "HTTP 500: internal " + secret},
		{"403", 403, secret, false,
			"HTTP 403: the endpoint refused the request's credentials (see the webhook's authorization, basicAuth, clientTLS or the controller's endpointConfigs): Forbidden (the body is not shown",
			"HTTP 403: the endpoint refused the request's credentials (see the webhook's authorization, basicAuth, clientTLS or the controller's endpointConfigs): " + secret},
		{"unknown status", 599, secret, false, "HTTP 599: unknown status (the body is not shown", secret},
		{"200 not JSON", 200, secret, false, "HTTP 200: decoding response: not JSON: syntax error at byte 1 of 11 (the body is not shown",
			"invalid character 'S'"},
		{"200 cut short", 200, `{"status":"` + secret, false, "HTTP 200: decoding response: not JSON: the body (22 bytes) ends before its value does", "unexpected EOF"},
		{"200 two values", 200, `{} "` + secret + `"`, true, "HTTP 200: decoding response: the body (16 bytes) is not one JSON value", "data after the top-level value"},
		{"200 duplicate key", 200, `{"` + secret + `":1,"` + secret + `":2}`, true,
			"strict responseUnMarshallMode: a key appears twice in one object (the body is not shown", secret},
		{"200 unknown field", 200, `{"` + secret + `":1}`, true,
			"strict responseUnMarshallMode: 1 top-level fields of the sync hook's response are not allowed (allowed: status, children; the body is not shown",
			secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			_, err := tenantWebhook(t, srv.URL, loopbackPolicy(), tc.strict).Invoke(context.Background(), map[string]any{}, nil)
			if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "invalid character") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("tenant's error %v; want %q and nothing of the body", err, tc.want)
			}
			mode := v1alpha1.ResponseUnMarshallModeLoose
			if tc.strict {
				mode = v1alpha1.ResponseUnMarshallModeStrict
			}
			_, err = buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL, ResponseUnMarshallMode: &mode}}, nil).
				Invoke(context.Background(), map[string]any{}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.trusted) {
				t.Fatalf("trusted webhook's error %v, want %q", err, tc.trusted)
			}
		})
	}
}

// TestTenantWebhookAllowed: an allowed address answers as any webhook does, through the
// policy's client even with TLS settings of its own.
func TestTenantWebhookAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"status":{"ok":true}}`)
	}))
	defer srv.Close()
	resp, err := tenantWebhook(t, srv.URL, loopbackPolicy(), true).Invoke(context.Background(), map[string]any{}, nil)
	if err != nil || mustJSON(resp) != `{"status":{"ok":true}}` {
		t.Fatalf("response %v, %v", resp, err)
	}

	p := newPKI(t)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status":{}}`) }))
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	for name, policy := range map[string]*Egress{"allowed": loopbackPolicy(), "refused": {}} {
		inv, err := Build(context.Background(), Spec{Controller: "ncc/team-a/x", Hook: "sync", Tenant: policy,
			Def: &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &tlsSrv.URL,
				WebhookConnection: v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{Inline: &p.caPEM}}}}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = inv.Invoke(context.Background(), map[string]any{}, nil)
		if refused := err != nil && strings.Contains(err.Error(), "is refused by the engine's tenant webhook policy"); refused != (name == "refused") || (name == "allowed" && err != nil) {
			t.Errorf("%s, with a CA bundle: %v", name, err)
		}
	}
}
