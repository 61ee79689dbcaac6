package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"metascript.dev/metascript/scripting/isolated"
)

// hookWorkerCommand is the hidden subcommand the isolated tier re-executes the engine's
// binary with: one worker process, speaking the protocol of scripting/isolated on its stdin
// and stdout. It is not for people.
const hookWorkerCommand = "hook-worker"

// isolatedFlags are the flags of `metascript run` for the isolated tier.
type isolatedFlags struct {
	workers int
	memory  string        // a Kubernetes quantity, per worker
	cpus    string        // a Kubernetes quantity of CPUs, per worker (cgroup v2 cpu.max)
	cpuTime time.Duration // per call (RLIMIT_CPU)
}

func (f *isolatedFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.workers, "isolated-workers", 2,
		"worker processes running the hooks of controllers with spec.isolation: Process; 0 runs none and refuses such controllers")
	fs.StringVar(&f.memory, "isolated-memory", "512Mi",
		"memory limit of one isolated worker (cgroup v2 memory.max, or RLIMIT_AS above its start-up address space)")
	fs.StringVar(&f.cpus, "isolated-cpu", "1", "CPU rate of one isolated worker, under cgroup v2 (cpu.max)")
	fs.DurationVar(&f.cpuTime, "isolated-cpu-time", 30*time.Second, "CPU time one isolated hook call may use (RLIMIT_CPU); 0 for none")
}

// options are the flags as the engine takes them; Workers 0 when the tier is off. The error
// names the flag at fault.
func (f *isolatedFlags) options(log *slog.Logger) (isolated.Options, error) {
	if f.workers <= 0 {
		return isolated.Options{}, nil
	}
	mem, err := resource.ParseQuantity(f.memory)
	if err != nil {
		return isolated.Options{}, fmt.Errorf("--isolated-memory %q: %w", f.memory, err)
	}
	cpus, err := resource.ParseQuantity(f.cpus)
	if err != nil {
		return isolated.Options{}, fmt.Errorf("--isolated-cpu %q: %w", f.cpus, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return isolated.Options{}, fmt.Errorf("isolated workers re-execute the engine's binary: %w", err)
	}
	plan, why := isolated.DetectCgroups()
	if plan == nil {
		log.Info("isolated workers limited by RLIMIT_AS, not cgroups", "why", why)
	}
	return isolated.Options{
		Command:     func() *exec.Cmd { return exec.Command(exe, hookWorkerCommand) },
		Workers:     f.workers,
		MemoryLimit: mem.Value(),
		CPUs:        cpus.AsApproximateFloat64(),
		CPUTime:     f.cpuTime,
		Cgroups:     plan,
	}, nil
}

// hookWorker is the hook-worker subcommand.
func hookWorker() int { return isolated.Serve(os.Stdin, os.Stdout) }
