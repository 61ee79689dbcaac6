package scale

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuditLogCounts checks the counting rules on a hand-written log: a watch counts once, at
// ResponseStarted; a forced patch is an apply; a line still being written waits for the next
// read.
func TestAuditLogCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := `{"auditID":"1","stage":"ResponseStarted","verb":"watch","requestURI":"/api/v1/configmaps?watch=true","user":{"username":"e"},"objectRef":{"resource":"configmaps"}}
{"auditID":"2","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/n/configmaps/a?fieldManager=m&force=true","user":{"username":"e"},"objectRef":{"resource":"configmaps","namespace":"n","name":"a"}}
{"auditID":"3","stage":"ResponseComplete","verb":"patch","requestURI":"/apis/g/v1/namespaces/n/fanouts/a/status","user":{"username":"e"},"objectRef":{"resource":"fanouts","subresource":"status"}}
{"auditID":"4","stage":"ResponseComplete","verb":"get","requestURI":"/api","user":{"username":"f"}}
{"auditID":"1","stage":"ResponseComplete","verb":"watch","requestURI":"/api/v1/configmaps?watch=true","user":{"username":"e"},"objectRef":{"resource":"configmaps"}}
{"auditID":"5","stage":"ResponseComplete","verb":"create"`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := openAuditLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	size, err := log.size()
	if err != nil {
		t.Fatal(err)
	}
	got, err := log.readTo(size)
	if err != nil {
		t.Fatal(err)
	}
	want := requests{
		"e": {{"watch", "configmaps"}: 1, {"apply", "configmaps"}: 1, {"patch", "fanouts/status"}: 1},
		"f": {{"get", "-"}: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("users %v, want %v", got, want)
	}
	for user, kinds := range want {
		if len(got[user]) != len(kinds) {
			t.Errorf("%s: %v, want %v", user, got[user], kinds)
		}
		for k, n := range kinds {
			if got[user][k] != n {
				t.Errorf("%s %v: %d, want %d", user, k, got[user][k], n)
			}
		}
	}
	if total, writes, _ := requestTotals(got["e"], func(string) bool { return true }); total != 3 || writes != 2 {
		t.Errorf("e: %d requests, %d writes; want 3, 2", total, writes)
	}

	// The partial line, once finished, is read next time.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`,"user":{"username":"f"},"objectRef":{"resource":"configmaps"}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if size, err = log.size(); err != nil {
		t.Fatal(err)
	}
	if got, err = log.readTo(size); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["f"][requestKind{"create", "configmaps"}] != 1 {
		t.Errorf("second read: %v, want one create by f", got)
	}
}
