package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeKeyPair writes a self-signed certificate for 127.0.0.1 named cn, and its key, to the
// files, as cert-manager renews a Secret's files: replaced whole.
func writeKeyPair(t *testing.T, certFile, keyFile, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}} {
		tmp := f.path + ".new"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdmissionServesRenewedCertificates: /healthz and /validate are served over TLS, and a
// key pair replaced on disk is served from the next connection on, without a restart.
func TestAdmissionServesRenewedCertificates(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeKeyPair(t, certFile, keyFile, "first")
	certs, err := newCertificateFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	handler, err := admissionHandler(&admissionFlags{ceilings: budgetFlags{memory: "512Mi"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveAdmission(ctx, ln, certs.get, handler) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// get returns the body of path and the name of the certificate served.
	get := func(method, path string) (int, string, string) {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
			DisableKeepAlives: true}}
		req, _ := http.NewRequest(method, "https://"+ln.Addr().String()+path, strings.NewReader("{}"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if code, body, cn := get("GET", "/healthz"); code != 200 || body != "ok\n" || cn != "first" {
		t.Errorf("GET /healthz: %d %q from %q, want 200 ok from first", code, body, cn)
	}
	if code, body, _ := get("POST", "/validate"); code != http.StatusBadRequest || !strings.Contains(body, "no request") {
		t.Errorf("POST /validate {}: %d %q, want 400: no request", code, body)
	}
	// A renewal with a later modification time than the first pair's.
	writeKeyPair(t, certFile, keyFile, "renewed")
	later := time.Now().Add(time.Minute)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, cn := get("GET", "/healthz"); cn != "renewed" {
		t.Errorf("after renewal, served %q, want renewed", cn)
	}
}

func TestAdmissionFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "--tls-cert-file and --tls-private-key-file are required"},
		{[]string{"--tls-cert-file=a", "--tls-private-key-file=b", "--discovery=false", "--ceiling-hook-max-memory=lots"}, "--ceiling-hook-max-memory"},
		{[]string{"--tls-cert-file=/nonexistent/a", "--tls-private-key-file=/nonexistent/b", "--discovery=false", "--check-service-accounts=false"}, "TLS key pair"},
		{[]string{"--tls-cert-file=a", "--tls-private-key-file=b", "--discovery=false", "--kubeconfig=/nonexistent/kubeconfig"},
			"cluster config (--discovery=false --check-service-accounts=false check without one)"},
	} {
		var stderr strings.Builder
		if code := admissionCommand(tt.args, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("admission %q: exit %d, %q; want %d and %q", tt.args, code, stderr.String(), exitUsage, tt.want)
		}
	}
}
