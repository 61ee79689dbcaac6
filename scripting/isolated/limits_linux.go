//go:build linux

package isolated

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// applyLimits sets a worker's own operating-system limits, before it reads any request:
// RLIMIT_AS (soft and hard: nothing in the worker may raise it again), the Go runtime's soft
// memory limit (so that the collector works harder before the hard limit is reached), and the
// CPU limit it moves before each call. It returns the address space the worker had reserved
// at start-up, which RLIMIT_AS is set above.
//
// RLIMIT_AS counts address space reserved and never touched: a worker starts with about
// 5.5 GiB of it (measured: 4 GiB Starlark reserves to encode small integers, about 1.2 GiB
// the Go runtime reserves for its heap and arena index, glibc's per-thread malloc arenas when
// the binary uses cgo). A fixed RLIMIT_AS would have to include that floor, which depends on
// the build and the machine; so the limit is what the worker has at start-up plus
// MemoryLimit, and MemoryLimit is what the hooks' calls may add.
func applyLimits(cfg workerConfig) (*cpuLimit, int64, error) {
	var base int64
	if cfg.MemoryLimit > 0 {
		var err error
		if base, err = addressSpace(); err != nil {
			return nil, 0, err
		}
		lim := uint64(base + cfg.MemoryLimit)
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			return nil, 0, fmt.Errorf("RLIMIT_AS %d: %w", lim, err)
		}
	}
	if cfg.GoMemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.GoMemoryLimit)
	}
	if cfg.CPUSeconds <= 0 {
		return nil, base, nil
	}
	c := &cpuLimit{seconds: cfg.CPUSeconds}
	// The Go runtime ignores SIGXCPU unless asked for it: the worker ends itself, with an
	// exit code that names the limit.
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		fmt.Fprintf(os.Stderr, "metascript hook-worker: CPU time limit of %ds per call exceeded\n", c.seconds)
		os.Exit(exitCPU)
	}()
	return c, base, nil
}

// addressSpace is the process's address space now (VmSize), in bytes.
func addressSpace() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}

// cpuLimit is a per-call CPU time limit made of RLIMIT_CPU, which counts the whole life of
// the process: before each call the soft limit is moved to the CPU time used so far plus the
// limit, rounded up to a whole second. The hard limit is left as it was, so it can be moved;
// the engine's wall-clock watchdog (budget timeout plus grace) backs it up.
type cpuLimit struct{ seconds int64 }

// arm sets the limit for the next call; a nil cpuLimit sets none.
func (c *cpuLimit) arm() error {
	if c == nil {
		return nil
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CPU, &cur); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	soft := uint64((used+time.Second-1)/time.Second) + uint64(c.seconds)
	if soft > cur.Max {
		soft = cur.Max
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: soft, Max: cur.Max}); err != nil {
		return fmt.Errorf("RLIMIT_CPU %d: %w", soft, err)
	}
	return nil
}

// attach makes cmd start inside the slot's cgroup (clone3 CLONE_INTO_CGROUP): the worker is
// limited from its first instruction.
func (s *cgroupSlot) attach(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(s.fd.Fd())
	return nil
}
