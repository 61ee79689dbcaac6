package hooks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"metascript.dev/metascript/apis/v1alpha1"
)

// echoAuthorization answers with the request's Authorization header and Basic credentials.
func echoAuthorization(w http.ResponseWriter, r *http.Request) {
	user, pass, basic := r.BasicAuth()
	fmt.Fprintf(w, `{"status":{"authorization":%q,"basic":%t,"user":%q,"password":%q}}`,
		r.Header.Get("Authorization"), basic, user, pass)
}

func TestWebhookCredentials(t *testing.T) {
	objs := objects{secrets: map[string]map[string]string{
		"ops/token": {"token": "s3cret\n"},
		"ops/basic": {"username": "engine", "password": "pa:ss", "u": "other", "p": "word"},
	}}
	srv := httptest.NewServer(http.HandlerFunc(echoAuthorization))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		conn v1alpha1.WebhookConnection
		want string // the status the server echoes, as JSON
	}{
		{"bearer by default, trailing newline trimmed", v1alpha1.WebhookConnection{Authorization: &v1alpha1.WebhookAuthorization{
			SecretRef: v1alpha1.SecretKeyRef{Namespace: "ops", Name: "token", Key: "token"}}},
			`{"authorization":"Bearer s3cret","basic":false,"password":"","user":""}`},
		{"another scheme", v1alpha1.WebhookConnection{Authorization: &v1alpha1.WebhookAuthorization{Type: "Token",
			SecretRef: v1alpha1.SecretKeyRef{Namespace: "ops", Name: "token", Key: "token"}}},
			`{"authorization":"Token s3cret","basic":false,"password":"","user":""}`},
		{"basic auth, default keys", v1alpha1.WebhookConnection{BasicAuth: &v1alpha1.BasicAuth{
			SecretRef: v1alpha1.SecretRef{Namespace: "ops", Name: "basic"}}},
			`{"authorization":"Basic ZW5naW5lOnBhOnNz","basic":true,"password":"pa:ss","user":"engine"}`},
		{"basic auth, given keys", v1alpha1.WebhookConnection{BasicAuth: &v1alpha1.BasicAuth{
			SecretRef: v1alpha1.SecretRef{Namespace: "ops", Name: "basic"}, UsernameKey: "u", PasswordKey: "p"}},
			`{"authorization":"Basic b3RoZXI6d29yZA==","basic":true,"password":"word","user":"other"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL, WebhookConnection: tc.conn}}, objs)
			resp, err := w.Invoke(context.Background(), map[string]any{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(resp["status"]); got != tc.want {
				t.Fatalf("server saw %s, want %s", got, tc.want)
			}
		})
	}
}

// tlsServer serves echoAuthorization over HTTPS with p's server certificate; clientAuth
// requires a client certificate p's CA signed.
func tlsServer(t *testing.T, p *pki, clientAuth bool) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(echoAuthorization))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	if clientAuth {
		srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, p.roots
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestWebhookPrivateCAAndClientCertificate(t *testing.T) {
	p := newPKI(t)
	objs := objects{
		secrets: map[string]map[string]string{
			"ops/ca":     {"ca.crt": p.caPEM, "other.pem": p.caPEM},
			"ops/client": {"tls.crt": p.clientCert, "tls.key": p.clientKey, "cert": p.clientCert, "key": p.clientKey},
		},
		configMaps: map[string]map[string]string{"ops/ca": {"ca.crt": p.caPEM}},
	}
	plain, mutual := tlsServer(t, p, false), tlsServer(t, p, true)
	clientTLS := &v1alpha1.ClientTLS{SecretRef: v1alpha1.SecretRef{Namespace: "ops", Name: "client"}}
	for _, tc := range []struct {
		name    string
		url     string
		conn    v1alpha1.WebhookConnection
		wantErr string
	}{
		{"system roots do not know the CA", plain.URL, v1alpha1.WebhookConnection{}, "certificate signed by unknown authority"},
		{"inline CA", plain.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{Inline: &p.caPEM}}, ""},
		{"CA from a Secret, default key", plain.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{
			SecretRef: &v1alpha1.CABundleKeyRef{Namespace: "ops", Name: "ca"}}}, ""},
		{"CA from a Secret, given key", plain.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{
			SecretRef: &v1alpha1.CABundleKeyRef{Namespace: "ops", Name: "ca", Key: "other.pem"}}}, ""},
		{"CA from a ConfigMap", plain.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{
			ConfigMapRef: &v1alpha1.CABundleKeyRef{Namespace: "ops", Name: "ca"}}}, ""},
		{"mTLS without a client certificate", mutual.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{Inline: &p.caPEM}},
			"certificate required"},
		{"mTLS, default keys", mutual.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{Inline: &p.caPEM},
			ClientTLS: clientTLS}, ""},
		{"mTLS, given keys", mutual.URL, v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{Inline: &p.caPEM},
			ClientTLS: &v1alpha1.ClientTLS{SecretRef: clientTLS.SecretRef, CertKey: "cert", PrivateKeyKey: "key"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &tc.url, WebhookConnection: tc.conn}}, objs)
			_, err := w.Invoke(context.Background(), map[string]any{}, nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestWebhookConnectionErrors(t *testing.T) {
	objs := objects{secrets: map[string]map[string]string{"ops/s": {"ca.crt": "not PEM", "tls.crt": "x", "tls.key": "y"}}}
	u := "https://hooks.ops/sync"
	for _, tc := range []struct {
		name    string
		conn    v1alpha1.WebhookConnection
		r       SourceResolver
		wantErr string
	}{
		{"missing Secret", v1alpha1.WebhookConnection{Authorization: &v1alpha1.WebhookAuthorization{
			SecretRef: v1alpha1.SecretKeyRef{Namespace: "ops", Name: "gone", Key: "token"}}}, objs,
			"webhook.authorization: Secret ops/gone not found"},
		{"missing key", v1alpha1.WebhookConnection{BasicAuth: &v1alpha1.BasicAuth{SecretRef: v1alpha1.SecretRef{Namespace: "ops", Name: "s"}}},
			objs, "webhook.basicAuth: Secret ops/s has no key username"},
		{"missing ConfigMap", v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{ConfigMapRef: &v1alpha1.CABundleKeyRef{Namespace: "ops", Name: "ca"}}},
			objs, "webhook.caBundle: ConfigMap ops/ca not found"},
		{"no PEM", v1alpha1.WebhookConnection{CABundle: &v1alpha1.CABundle{SecretRef: &v1alpha1.CABundleKeyRef{Namespace: "ops", Name: "s"}}},
			objs, "webhook.caBundle: no PEM certificate found"},
		{"bad key pair", v1alpha1.WebhookConnection{ClientTLS: &v1alpha1.ClientTLS{SecretRef: v1alpha1.SecretRef{Namespace: "ops", Name: "s"}}},
			objs, "webhook.clientTLS: tls: failed to find any PEM data"},
		{"Basic as an authorization type", v1alpha1.WebhookConnection{Authorization: &v1alpha1.WebhookAuthorization{Type: "BASIC",
			SecretRef: v1alpha1.SecretKeyRef{Namespace: "ops", Name: "s", Key: "ca.crt"}}}, objs, "must not be Basic"},
		{"Secrets cannot be read", v1alpha1.WebhookConnection{BasicAuth: &v1alpha1.BasicAuth{SecretRef: v1alpha1.SecretRef{Namespace: "ops", Name: "s"}}},
			nil, "Secret ops/s cannot be read here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(context.Background(), Spec{Hook: "sync", Def: &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &u,
				WebhookConnection: tc.conn}}}, nil, tc.r)
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want a ConfigError containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestEndpointConfigHostMatching(t *testing.T) {
	svc := func(port int32) *v1alpha1.Webhook {
		return &v1alpha1.Webhook{Service: &v1alpha1.ServiceReference{Name: "hooks", Namespace: "ops", Port: &port}, Path: ptr("/sync")}
	}
	for _, tc := range []struct {
		name  string
		hook  *v1alpha1.Webhook
		hosts []string // the endpoint configs' hosts, in order
		want  int      // the index of the entry used; -1 none
	}{
		{"same host", &v1alpha1.Webhook{URL: ptr("https://hooks.ops/sync")}, []string{"other", "hooks.ops"}, 1},
		{"case does not matter", &v1alpha1.Webhook{URL: ptr("https://Hooks.OPS/sync")}, []string{"HOOKS.ops"}, 0},
		{"443 is no port", &v1alpha1.Webhook{URL: ptr("https://hooks.ops:443/sync")}, []string{"hooks.ops"}, 0},
		{"no port is 443", &v1alpha1.Webhook{URL: ptr("https://hooks.ops/sync")}, []string{"hooks.ops:443"}, 0},
		{"80 is no port", &v1alpha1.Webhook{URL: ptr("http://hooks.ops:80/sync")}, []string{"hooks.ops"}, 0},
		{"another port differs", &v1alpha1.Webhook{URL: ptr("https://hooks.ops:8443/sync")}, []string{"hooks.ops", "hooks.ops:8443"}, 1},
		{"a port the URL lacks differs", &v1alpha1.Webhook{URL: ptr("https://hooks.ops/sync")}, []string{"hooks.ops:8443"}, -1},
		{"first match wins", &v1alpha1.Webhook{URL: ptr("https://hooks.ops/sync")}, []string{"hooks.ops", "hooks.ops:443"}, 0},
		{"IPv6", &v1alpha1.Webhook{URL: ptr("https://[::1]:8443/sync")}, []string{"[::1]:8443"}, 0},
		{"service on port 80", svc(80), []string{"hooks.ops"}, 0},
		{"service on another port", svc(8443), []string{"hooks.ops", "hooks.ops:8443"}, 1},
		{"another host", &v1alpha1.Webhook{URL: ptr("https://hooks.ops.svc/sync")}, []string{"hooks.ops"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var endpoints []v1alpha1.EndpointConfig
			for _, h := range tc.hosts {
				endpoints = append(endpoints, v1alpha1.EndpointConfig{Host: h})
			}
			address, err := WebhookURL(tc.hook)
			if err != nil {
				t.Fatal(err)
			}
			_, field := connectionFor(tc.hook, address, endpoints)
			want := ""
			if tc.want >= 0 {
				want = fmt.Sprintf("endpointConfigs[%d]", tc.want)
			}
			if field != want {
				t.Fatalf("settings from %q, want %q", field, want)
			}
		})
	}
}

// TestEndpointConfigApplies: a hook without connection settings takes its host's entry; a
// hook with any of its own ignores the entry as a whole.
func TestEndpointConfigApplies(t *testing.T) {
	p := newPKI(t)
	objs := objects{secrets: map[string]map[string]string{"ops/a": {"token": "entry"}, "ops/b": {"token": "hook"}}}
	srv := tlsServer(t, p, false)
	host := strings.ToUpper(mustParse(t, srv.URL).Host)
	entry := v1alpha1.EndpointConfig{Host: host, WebhookConnection: v1alpha1.WebhookConnection{
		CABundle:      &v1alpha1.CABundle{Inline: &p.caPEM},
		Authorization: &v1alpha1.WebhookAuthorization{SecretRef: v1alpha1.SecretKeyRef{Namespace: "ops", Name: "a", Key: "token"}}}}

	w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL}}, objs,
		v1alpha1.EndpointConfig{Host: "elsewhere"}, entry)
	resp, err := w.Invoke(context.Background(), map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp["status"].(map[string]any)["authorization"]; got != "Bearer entry" {
		t.Fatalf("Authorization %v, want the entry's", got)
	}

	own := v1alpha1.WebhookConnection{Authorization: &v1alpha1.WebhookAuthorization{
		SecretRef: v1alpha1.SecretKeyRef{Namespace: "ops", Name: "b", Key: "token"}}}
	w = buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL, WebhookConnection: own}}, objs, entry)
	if _, err := w.Invoke(context.Background(), map[string]any{}, nil); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("error %v: the hook's own authorization must replace the entry whole, its caBundle included", err)
	}
	if got := w.Header.Get("Authorization"); got != "Bearer hook" {
		t.Fatalf("Authorization %q, want the hook's own", got)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
