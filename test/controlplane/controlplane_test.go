package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestStart proves the harness serves the API and installs the project's CRDs.
func TestStart(t *testing.T) {
	cp, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("default namespace: %v", err)
	}
	list, err := cs.Discovery().ServerResourcesForGroupVersion("metascript.dev/v1alpha1")
	if err != nil {
		t.Fatalf("CRDs not served: %v", err)
	}
	if len(list.APIResources) == 0 {
		t.Fatal("metascript.dev/v1alpha1 serves no resources")
	}
}

// TestAuditUsersAndPIDs proves the audit log names each user's requests and that the
// processes are found.
func TestAuditUsersAndPIDs(t *testing.T) {
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	cp, err := Start(Options{AuditLog: auditLog, CRDDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	cfg, kubeconfig, err := cp.User("audit-test-user")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(kubeconfig, []byte(strings.TrimSuffix(cfg.Host, "/"))) {
		t.Errorf("the kubeconfig does not name the API server %s", cfg.Host)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, find := range []func() (int, error){cp.APIServerPID, cp.EtcdPID} {
		pid, err := find()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			t.Error(err)
		}
	}
	// Blocking mode: the event is in the file once the request has returned, or very soon
	// after, as it is written after the response.
	want := []byte(`"username":"audit-test-user"`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(auditLog)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, want) && bytes.Contains(data, []byte(`"stage":"ResponseComplete"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event of audit-test-user in the audit log:\n%.2000s", data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
