package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"metascript.dev/metascript/engine"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServers checks that each endpoint is served where its flag says, that endpoints may
// share an address, and that pprof is off unless asked for.
func TestServers(t *testing.T) {
	eng, err := engine.New(engine.Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string) (int, string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Get(url)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode, string(body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %v", url, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stop := func(servers []*http.Server) {
		for _, s := range servers {
			_ = s.Shutdown(context.Background())
		}
	}
	log := slog.New(slog.DiscardHandler)

	shared, health := freeAddr(t), freeAddr(t)
	servers := startServers(&engineFlags{metricsAddr: shared, pprofAddr: shared, healthAddr: health}, eng, healthChecks(eng, nil, nil), log)
	defer stop(servers)
	if len(servers) != 2 {
		t.Fatalf("%d servers, want 2 (metrics and pprof share one)", len(servers))
	}
	if code, body := get("http://" + shared + "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics = %d %.200q", code, body)
	}
	if code, body := get("http://" + shared + "/debug/pprof/cmdline"); code != http.StatusOK || body == "" {
		t.Errorf("/debug/pprof/cmdline = %d %q", code, body)
	}
	if code, _ := get("http://" + health + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get("http://" + health + "/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("pprof served on the health address: %d", code)
	}

	metrics := freeAddr(t)
	servers = startServers(&engineFlags{metricsAddr: metrics}, eng, healthChecks(eng, nil, nil), log)
	defer stop(servers)
	if len(servers) != 1 {
		t.Fatalf("%d servers, want 1", len(servers))
	}
	if code, _ := get("http://" + metrics + "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof served without --pprof-addr: %d", code)
	}
}
