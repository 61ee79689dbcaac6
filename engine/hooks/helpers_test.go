package hooks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"metascript.dev/metascript/apis/v1alpha1"
)

// objects is a SourceResolver and SecretReader over fixed Secrets and ConfigMaps, keyed
// "namespace/name", each a map of keys to values.
type objects struct {
	secrets    map[string]map[string]string
	configMaps map[string]map[string]string
}

func (o objects) ConfigMapKey(_ context.Context, ref v1alpha1.ConfigMapKeyRef) (string, error) {
	v, err := lookup("ConfigMap", o.configMaps, ref.Namespace, ref.Name, ref.Key)
	return v, err
}

func (o objects) SecretKey(_ context.Context, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	v, err := lookup("Secret", o.secrets, ref.Namespace, ref.Name, ref.Key)
	return []byte(v), err
}

func lookup(kind string, m map[string]map[string]string, ns, name, key string) (string, error) {
	data, ok := m[ns+"/"+name]
	if !ok {
		return "", fmt.Errorf("%s %s/%s not found", kind, ns, name)
	}
	v, ok := data[key]
	if !ok {
		return "", fmt.Errorf("%s %s/%s has no key %s", kind, ns, name, key)
	}
	return v, nil
}

// pki is a private CA, a server certificate it signed for 127.0.0.1 and localhost, and a
// client certificate it signed.
type pki struct {
	caPEM                 string
	roots                 *x509.CertPool
	server                tls.Certificate
	clientCert, clientKey string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &pki{caPEM: string(pemBlock("CERTIFICATE", caDER)), roots: x509.NewCertPool()}
	p.roots.AddCert(ca)

	issue := func(serial int64, usage x509.ExtKeyUsage, cn string) ([]byte, []byte) {
		key := newKey(t)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER)
	}
	certPEM, keyPEM := issue(2, x509.ExtKeyUsageServerAuth, "server")
	if p.server, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	c, k := issue(3, x509.ExtKeyUsageClientAuth, "engine")
	p.clientCert, p.clientKey = string(c), string(k)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// buildWebhookHook builds the sync hook of w with r and endpoints, or fails the test.
func buildWebhookHook(t *testing.T, h *v1alpha1.Hook, r SourceResolver, endpoints ...v1alpha1.EndpointConfig) *Webhook {
	t.Helper()
	inv, err := Build(context.Background(), Spec{Controller: "cc/x", Hook: "sync", Def: h,
		ResponseFields: []string{"status", "children", "resyncAfterSeconds", "finalized"}, EndpointConfigs: endpoints}, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return inv.(*Webhook)
}

func ptr[T any](v T) *T { return &v }
