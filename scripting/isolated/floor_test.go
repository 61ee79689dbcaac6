package isolated_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/benchsync"
	"metascript.dev/metascript/scripting/isolated"
)

// TestMemoryLimitFloorHolds: a worker limited to MinMemoryLimit runs the benchmarks' sync
// hooks at 1000 children in both languages (and reports how much it grew from start-up).
func TestMemoryLimitFloorHolds(t *testing.T) {
	pool, r := newPool(t, isolated.Options{MemoryLimit: isolated.MinMemoryLimit})
	start := childrenVm(t, "VmSize:")
	for _, l := range languages {
		prog, err := pool.Compile(l.lang, "sync"+l.ext, source(t, "../bench/testdata/sync"+l.ext))
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if _, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync", Request: benchsync.Request(1000)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := r.get(); len(got) != 0 {
		t.Fatalf("workers replaced: %v", got)
	}
	peak := childrenVm(t, "VmPeak:")
	t.Logf("worker address space: %d MiB at start-up, %d MiB at its peak (floor %d MiB above start-up)", start>>20, peak>>20, isolated.MinMemoryLimit>>20)
}

// childrenVm is the largest value of field (VmSize:, VmPeak:) of this process's children
// (the one worker), in bytes.
func childrenVm(t *testing.T, field string) int64 {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var peak int64
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(data)) {
			status, _ := os.ReadFile("/proc/" + pid + "/status")
			for line := range strings.Lines(string(status)) {
				if v, ok := strings.CutPrefix(line, field); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					peak = max(peak, kb<<10)
				}
			}
		}
	}
	return peak
}
