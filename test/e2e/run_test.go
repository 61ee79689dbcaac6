// Package e2e runs the metascript binary as a user would: built from cmd/metascript,
// pointed at a real control plane by kubeconfig, probed over HTTP, stopped by SIGTERM.
package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"metascript.dev/metascript/test/controlplane"
)

// buildEngine builds the metascript command into a temporary folder: the repository's root,
// the folder and the binary's path.
func buildEngine(t *testing.T) (root, dir, bin string) {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "metascript")
	build := exec.Command("go", "build", "-o", bin, "./cmd/metascript")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return root, dir, bin
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestRunServesProbesAndMetricsAndStopsOnSIGTERM: `metascript run` becomes ready, serves
// /healthz, /readyz and /metrics, and exits 0 after SIGTERM.
func TestRunServesProbesAndMetricsAndStopsOnSIGTERM(t *testing.T) {
	_, dir, bin := buildEngine(t)
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	kubeconfig, err := cp.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	metricsAddr, healthAddr, debugAddr := freePort(t), freePort(t), freePort(t)
	var logs bytes.Buffer
	run := exec.Command(bin, "run", "--kubeconfig", kc, "--metrics-addr", metricsAddr, "--health-addr", healthAddr, "--debug-addr", debugAddr)
	run.Stdout, run.Stderr = &logs, &logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	defer func() {
		if run.ProcessState == nil {
			_ = run.Process.Kill()
		}
	}()

	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := get("http://" + healthAddr + "/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not ready after 30s (last %d); engine log:\n%s", code, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("http://" + healthAddr + "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	code, body := get("http://" + metricsAddr + "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "metascript_compile_cache_entries") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics = %d, without the engine's metrics:\n%.2000s", code, body)
	}

	// metascript trace reads the engine's debug endpoint: no controller, no reconcile yet.
	out, err := exec.Command(bin, "trace", "--addr", debugAddr).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "no reconciles recorded" {
		t.Fatalf("metascript trace: %v: %s", err, out)
	}

	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("metascript run exited with %v after SIGTERM; log:\n%s", err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("metascript run still running 30s after SIGTERM; log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Fatalf("no shutdown line in the log:\n%s", logs.String())
	}
}
