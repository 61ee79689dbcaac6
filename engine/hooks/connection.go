package hooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
)

// SecretReader reads one key of a Secret: the CA bundles, credentials and client
// certificates that webhook connections refer to. The SourceResolver given to Build
// implements it where Secrets can be read; elsewhere a webhook referring to a Secret fails
// to build.
type SecretReader interface {
	SecretKey(ctx context.Context, ref v1alpha1.SecretKeyRef) ([]byte, error)
}

// ConfigError reports webhook connection settings that cannot be used: a Secret, ConfigMap
// or key that cannot be read, or a value that is no usable certificate, key or credential.
// Field locates the setting: webhook.caBundle, endpointConfigs[0].authorization, ...
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// WebhookURL is the address of a webhook spec: url as is, or a Service's cluster DNS name.
func WebhookURL(w *v1alpha1.Webhook) (string, error) {
	switch {
	case w.URL != nil:
		return *w.URL, nil
	case w.Service != nil:
		proto, port := "http", int32(80)
		if w.Service.Protocol != nil {
			proto = *w.Service.Protocol
		}
		if w.Service.Port != nil {
			port = *w.Service.Port
		}
		u := fmt.Sprintf("%s://%s.%s:%d", proto, w.Service.Name, w.Service.Namespace, port)
		if w.Path != nil {
			u += *w.Path
		}
		return u, nil
	}
	return "", fmt.Errorf("webhook: exactly one of url or service must be set")
}

// connectionFor picks the connection settings of a webhook at address: its own when it sets
// any, else those of the first endpoint config whose host matches, else none (nil). field
// names where they come from.
func connectionFor(w *v1alpha1.Webhook, address string, endpoints []v1alpha1.EndpointConfig) (c *v1alpha1.WebhookConnection, field string) {
	if w.WebhookConnection.IsSet() {
		return &w.WebhookConnection, "webhook"
	}
	u, err := url.Parse(address)
	if err != nil {
		return nil, ""
	}
	host := normalizeHost(u.Host)
	for i := range endpoints {
		if normalizeHost(endpoints[i].Host) == host {
			return &endpoints[i].WebhookConnection, fmt.Sprintf("endpointConfigs[%d]", i)
		}
	}
	return nil, ""
}

// normalizeHost is host[:port] as compared with endpoint configs: lower case, without
// IPv6 brackets when there is no port, and without port 80 or 443.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ""
	}
	if port == "" || port == "80" || port == "443" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// dial is what a connection's settings resolve to.
type dial struct {
	client *http.Client
	header http.Header
}

// resolveConnection reads what c refers to and returns the client and headers that apply
// it. Without a CA bundle or client certificate the client is http.DefaultClient, or, for a
// tenant's webhook (tenant set), the policy's shared one; a tenant's client always dials
// through the policy and follows no redirect.
func resolveConnection(ctx context.Context, c *v1alpha1.WebhookConnection, field string, r SourceResolver, tenant *Egress) (dial, error) {
	out := dial{client: http.DefaultClient, header: http.Header{}}
	if tenant != nil {
		out.client = tenant.client(nil)
	}
	if c == nil {
		return out, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CABundle != nil {
		pem, err := caBundlePEM(ctx, c.CABundle, r)
		if err == nil && !appendCerts(tlsConfig, pem) {
			err = fmt.Errorf("no PEM certificate found")
		}
		if err != nil {
			return out, &ConfigError{Field: field + ".caBundle", Err: err}
		}
	}
	if t := c.ClientTLS; t != nil {
		cert, err := secretKey(ctx, r, t.SecretRef, orDefault(t.CertKey, "tls.crt"))
		var key []byte
		if err == nil {
			key, err = secretKey(ctx, r, t.SecretRef, orDefault(t.PrivateKeyKey, "tls.key"))
		}
		var pair tls.Certificate
		if err == nil {
			pair, err = tls.X509KeyPair(cert, key)
		}
		if err != nil {
			return out, &ConfigError{Field: field + ".clientTLS", Err: err}
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	switch {
	case (c.CABundle != nil || c.ClientTLS != nil) && tenant != nil:
		out.client = tenant.client(tlsConfig)
	case c.CABundle != nil || c.ClientTLS != nil:
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.TLSClientConfig = tlsConfig
		out.client = &http.Client{Transport: transport}
	}
	if a := c.Authorization; a != nil {
		value, err := authorizationHeader(ctx, a, r)
		if err != nil {
			return out, &ConfigError{Field: field + ".authorization", Err: err}
		}
		out.header.Set("Authorization", value)
	}
	if b := c.BasicAuth; b != nil {
		user, err := secretKey(ctx, r, b.SecretRef, orDefault(b.UsernameKey, "username"))
		var pass []byte
		if err == nil {
			pass, err = secretKey(ctx, r, b.SecretRef, orDefault(b.PasswordKey, "password"))
		}
		if err != nil {
			return out, &ConfigError{Field: field + ".basicAuth", Err: err}
		}
		out.header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(string(user)+":"+string(pass))))
	}
	return out, nil
}

func appendCerts(c *tls.Config, pem []byte) bool {
	if c.RootCAs == nil {
		c.RootCAs = x509.NewCertPool()
	}
	return c.RootCAs.AppendCertsFromPEM(pem)
}

func caBundlePEM(ctx context.Context, b *v1alpha1.CABundle, r SourceResolver) ([]byte, error) {
	switch {
	case b.Inline != nil:
		return []byte(*b.Inline), nil
	case b.SecretRef != nil:
		ref := b.SecretRef
		return secretKey(ctx, r, v1alpha1.SecretRef{Name: ref.Name, Namespace: ref.Namespace}, orDefault(ref.Key, "ca.crt"))
	case b.ConfigMapRef != nil:
		ref := b.ConfigMapRef
		key := v1alpha1.ConfigMapKeyRef{Name: ref.Name, Namespace: ref.Namespace, Key: orDefault(ref.Key, "ca.crt")}
		if r == nil {
			return nil, fmt.Errorf("ConfigMap %s/%s cannot be read here", key.Namespace, key.Name)
		}
		s, err := r.ConfigMapKey(ctx, key)
		return []byte(s), err
	}
	return nil, fmt.Errorf("exactly one of inline, secretRef or configMapRef must be set")
}

// authorizationHeader is `<type> <credential>`; surrounding white space (a trailing
// newline) is trimmed from the credential.
func authorizationHeader(ctx context.Context, a *v1alpha1.WebhookAuthorization, r SourceResolver) (string, error) {
	scheme := orDefault(a.Type, "Bearer")
	if strings.EqualFold(scheme, "basic") {
		return "", fmt.Errorf("type must not be Basic: use basicAuth")
	}
	if strings.ContainsFunc(scheme, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
		return "", fmt.Errorf("type %q is not an HTTP authentication scheme", scheme)
	}
	ref := a.SecretRef
	cred, err := secretKey(ctx, r, v1alpha1.SecretRef{Name: ref.Name, Namespace: ref.Namespace}, ref.Key)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(cred))
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("the credential in Secret %s/%s key %s spans several lines", ref.Namespace, ref.Name, ref.Key)
	}
	return scheme + " " + token, nil
}

func secretKey(ctx context.Context, r SourceResolver, ref v1alpha1.SecretRef, key string) ([]byte, error) {
	sr, ok := r.(SecretReader)
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s cannot be read here", ref.Namespace, ref.Name)
	}
	return sr.SecretKey(ctx, v1alpha1.SecretKeyRef{Name: ref.Name, Namespace: ref.Namespace, Key: key})
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
