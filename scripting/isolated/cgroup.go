package isolated

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// cgroupRoot is where the unified (v2) hierarchy must be mounted for the Pool to use it.
const cgroupRoot = "/sys/fs/cgroup"

// CgroupPlan is where a Pool makes its workers' cgroups: under the engine's own cgroup, each
// worker in a cgroup of its own with memory.max (and cpu.max when the cpu controller is
// delegated too). Make one with DetectCgroups.
type CgroupPlan struct {
	// Dir is the engine's own cgroup directory, e.g. /sys/fs/cgroup/system.slice/metascript.service.
	Dir string
	// CPU says the cpu controller is available as well as memory.
	CPU bool
	// MoveEngine says the controllers are not yet enabled for Dir's children: cgroup v2
	// allows that only in a cgroup without processes, so the engine first moves itself into
	// a leaf child of Dir (metascript-engine).
	MoveEngine bool
}

// cgroupView is what PlanCgroups reads: a file's contents, and whether a path is writable.
type cgroupView struct {
	read     func(path string) ([]byte, error)
	writable func(path string) bool
}

// DetectCgroups decides from this machine's /proc and /sys whether workers can get cgroups.
// nil and the reason when they cannot: then RLIMIT_AS limits them.
func DetectCgroups() (*CgroupPlan, string) {
	return planCgroups(cgroupView{
		read:     os.ReadFile,
		writable: func(p string) bool { return syscall.Access(p, 2 /* W_OK */) == nil },
	})
}

// planCgroups is DetectCgroups over any view of the files, so that its decisions are tested
// on fake trees: the unified hierarchy must be mounted at /sys/fs/cgroup (not only at
// /sys/fs/cgroup/unified, as on a hybrid machine, where it has no controllers), the engine's
// cgroup (the 0:: line of /proc/self/cgroup) must offer the memory controller, and its
// directory, cgroup.procs and cgroup.subtree_control must be writable by the engine
// (delegated to it).
func planCgroups(v cgroupView) (*CgroupPlan, string) {
	mounts, err := v.read("/proc/self/mountinfo")
	if err != nil {
		return nil, "cannot read /proc/self/mountinfo: " + err.Error()
	}
	if fs := mountType(mounts, cgroupRoot); fs != "cgroup2" {
		if fs == "" {
			return nil, cgroupRoot + " is not mounted"
		}
		return nil, cgroupRoot + " is a " + fs + " mount, not cgroup2 (cgroup v1 or hybrid)"
	}
	self, err := v.read("/proc/self/cgroup")
	if err != nil {
		return nil, "cannot read /proc/self/cgroup: " + err.Error()
	}
	var path string
	found := false
	for line := range strings.Lines(string(self)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return nil, "/proc/self/cgroup has no cgroup v2 entry"
	}
	dir := filepath.Join(cgroupRoot, path)
	controllers, err := v.read(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, "cannot read the engine's cgroup.controllers: " + err.Error()
	}
	avail := strings.Fields(string(controllers))
	if !slices.Contains(avail, "memory") {
		return nil, "the memory controller is not delegated to the engine's cgroup " + dir
	}
	for _, f := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		if !v.writable(f) {
			return nil, f + " is not writable by the engine"
		}
	}
	enabled, err := v.read(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, "cannot read the engine's cgroup.subtree_control: " + err.Error()
	}
	on := strings.Fields(string(enabled))
	cpu := slices.Contains(avail, "cpu")
	return &CgroupPlan{Dir: dir, CPU: cpu,
		MoveEngine: !slices.Contains(on, "memory") || (cpu && !slices.Contains(on, "cpu"))}, ""
}

// mountType is the file system type mounted at point in a mountinfo file, the last mount
// there winning; "" when nothing is.
func mountType(mountinfo []byte, point string) string {
	fs := ""
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(after) >= 1 && fields[4] == point {
			fs = after[0]
		}
	}
	return fs
}

// cgroupSlot is the cgroup of one worker slot; a replacement worker reuses it.
type cgroupSlot struct {
	dir string
	fd  *os.File
}

// slots makes the cgroups of n workers, each limited to memory bytes and cpus CPUs.
func (c *CgroupPlan) slots(n int, memory int64, cpus float64) ([]*cgroupSlot, error) {
	if c.MoveEngine {
		leaf := filepath.Join(c.Dir, "metascript-engine")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("isolated: cgroup: %w", err)
		}
		// "0" moves the writing process, all its threads with it.
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
			return nil, fmt.Errorf("isolated: cgroup: move the engine into %s: %w", leaf, err)
		}
		enable := "+memory"
		if c.CPU {
			enable += " +cpu"
		}
		if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
			return nil, fmt.Errorf("isolated: cgroup: enable %s for %s's children: %w", enable, c.Dir, err)
		}
	}
	var out []*cgroupSlot
	for i := range n {
		s := &cgroupSlot{dir: filepath.Join(c.Dir, "metascript-worker-"+strconv.Itoa(i))}
		out = append(out, s)
		if err := s.make(memory, cpus, c.CPU); err != nil {
			for _, s := range out {
				s.remove()
			}
			return nil, err
		}
	}
	return out, nil
}

func (s *cgroupSlot) make(memory int64, cpus float64, cpu bool) error {
	if err := os.Mkdir(s.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("isolated: cgroup: %w", err)
	}
	settings := [][2]string{{"memory.max", strconv.FormatInt(memory, 10)}, {"memory.swap.max", "0"}}
	if cpu && cpus > 0 {
		const period = 100000
		settings = append(settings, [2]string{"cpu.max", fmt.Sprintf("%d %d", int64(cpus*period), period)})
	}
	for _, kv := range settings {
		err := os.WriteFile(filepath.Join(s.dir, kv[0]), []byte(kv[1]), 0)
		if err != nil && !(kv[0] == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("isolated: cgroup: %s %s: %w", kv[0], kv[1], err)
		}
	}
	fd, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("isolated: cgroup: %w", err)
	}
	s.fd = fd
	return nil
}

// oomKills is the cgroup's count of processes the kernel killed at memory.max.
func (s *cgroupSlot) oomKills() int64 {
	data, _ := os.ReadFile(filepath.Join(s.dir, "memory.events"))
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the cgroup; its workers have ended.
func (s *cgroupSlot) remove() {
	if s.fd != nil {
		s.fd.Close()
	}
	_ = os.Remove(s.dir)
}
