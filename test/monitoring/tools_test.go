package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
)

// tools returns the folder holding prometheus and promtool, fetching them first (tools.sh)
// when the cache lacks them.
func tools(t *testing.T) string {
	t.Helper()
	toolsOnce.Do(func() {
		var out bytes.Buffer
		cmd := exec.Command("bash", "tools.sh")
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if toolsErr = cmd.Run(); toolsErr == nil {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			toolsDir = lines[len(lines)-1]
		}
	})
	if toolsErr != nil {
		t.Fatalf("fetching prometheus and promtool (test/monitoring/tools.sh): %v", toolsErr)
	}
	return toolsDir
}
