package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The engine's heap is mostly its caches, and the Go collector lets the heap grow to twice
// what is live before it runs (GOGC=100). A container's memory limit is not known to the Go
// runtime, so an engine whose live heap is over half its limit is killed instead of
// collecting sooner. --memory-limit sets the runtime's soft limit (debug.SetMemoryLimit):
// near it the collector runs more often, trading CPU for staying under it.

// memoryLimitShare is the share of a container's memory limit that "auto" gives the Go heap:
// the rest is for the runtime's own memory, stacks and what the collector has freed and not
// yet returned.
const memoryLimitShare = 0.9

// setMemoryLimit resolves spec (memoryLimit) on this machine and sets the runtime's limit.
func setMemoryLimit(spec string, log *slog.Logger) error {
	cgroup, _ := os.ReadFile("/proc/self/cgroup")
	limit, from, err := memoryLimit(spec, os.Getenv, cgroup, os.DirFS("/"))
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	if now := debug.SetMemoryLimit(-1); now != math.MaxInt64 {
		log.Info("memory limit", "bytes", now, "from", from)
	} else {
		log.Info("no memory limit", "from", from)
	}
	return nil
}

// memoryLimit resolves --memory-limit: "auto" (9/10 of the cgroup's memory limit, when
// there is one and GOMEMLIMIT is not set), "none", or a quantity such as 900Mi. It returns
// the limit in bytes (0: leave the runtime's setting) and where it came from, for the log.
// procSelfCgroup is /proc/self/cgroup's text; root is the file system that holds
// sys/fs/cgroup.
func memoryLimit(spec string, getenv func(string) string, procSelfCgroup []byte, root fs.FS) (int64, string, error) {
	switch spec {
	case "none":
		return 0, "none", nil
	case "auto", "":
		if getenv("GOMEMLIMIT") != "" {
			return 0, "GOMEMLIMIT", nil
		}
		limit, where := cgroupMemoryLimit(procSelfCgroup, root)
		if limit <= 0 {
			return 0, "none (no cgroup memory limit)", nil
		}
		return int64(float64(limit) * memoryLimitShare), fmt.Sprintf("%.0f%% of %s's %d bytes", 100*memoryLimitShare, where, limit), nil
	}
	q, err := resource.ParseQuantity(spec)
	if err != nil {
		return 0, "", fmt.Errorf("--memory-limit %q: want auto, none or a quantity such as 900Mi: %w", spec, err)
	}
	if q.Sign() <= 0 {
		return 0, "", fmt.Errorf("--memory-limit %q: must be above zero (none for no limit)", spec)
	}
	return q.Value(), "--memory-limit", nil
}

// cgroupMemoryLimit returns the memory limit of the process's cgroup and the file it was
// read from, or 0 when none is set or none can be read: cgroup v2's memory.max (the lowest
// of the cgroup's and its ancestors'), else cgroup v1's memory.limit_in_bytes. In a
// container with its own cgroup namespace the process's cgroup is the mount's root.
func cgroupMemoryLimit(procSelfCgroup []byte, root fs.FS) (int64, string) {
	sc := bufio.NewScanner(bytes.NewReader(procSelfCgroup))
	var v2, v1 string
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case hasController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	if v2 != "" {
		var lowest int64
		var where string
		for dir := path.Clean("/" + v2); ; dir = path.Dir(dir) {
			file := path.Join("sys/fs/cgroup", dir, "memory.max")
			if n, ok := readLimit(root, file); ok && (lowest == 0 || n < lowest) {
				lowest, where = n, "/"+file
			}
			if dir == "/" {
				break
			}
		}
		if lowest > 0 {
			return lowest, where
		}
	}
	// v1: the process's cgroup, else the mount's root (a container's own cgroup namespace).
	for dir := path.Clean("/" + v1); ; dir = "/" {
		file := path.Join("sys/fs/cgroup/memory", dir, "memory.limit_in_bytes")
		if n, ok := readLimit(root, file); ok {
			return n, "/" + file
		}
		if dir == "/" {
			return 0, ""
		}
	}
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// unlimitedV1 is above any real limit: cgroup v1 writes "no limit" as the largest multiple
// of the page size in an int64.
const unlimitedV1 = math.MaxInt64 / 2

// readLimit reads a limit file: a number of bytes, or "max" (v2) or a huge number (v1) for
// none, which reads as not found.
func readLimit(root fs.FS, file string) (int64, bool) {
	data, err := fs.ReadFile(root, file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 || n >= unlimitedV1 {
		return 0, false
	}
	return n, true
}
