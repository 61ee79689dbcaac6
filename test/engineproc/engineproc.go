// Package engineproc runs the engine as its own process (`metascript run`, built for the
// benchmark) and measures it from /proc: CPU time, peak RSS, its /metrics, CPU profiles.
// The benchmarks that compare the engine's cost across runs (test/scale, test/tenants) share
// it so that they measure the same way.
package engineproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"metascript.dev/metascript/test/controlplane"
)

// Build builds cmd/metascript into dir.
func Build(dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "metascript")
	build := exec.Command("go", "build", "-o", bin, "./cmd/metascript")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/metascript: %w\n%s", err, out)
	}
	return bin, nil
}

// Process is `metascript run` running as its own process, so that its CPU time and
// memory are its own.
type Process struct {
	cmd       *exec.Cmd
	log       string // file holding its stderr
	metrics   string // URL of /metrics
	health    string // URL of the health server (/healthz, /readyz)
	pprofAddr string // empty unless profiling
	exited    chan struct{}
	err       error // of Wait, once exited is closed
}

// Start runs bin against the cluster of kubeconfig with workers workers and an
// unlimited client rate, without leader election (a benchmark's one engine: its Lease
// renewals would count among its requests), and with the flags of extra after those. Its
// log is dir/engine.log, or dir/engine-<n>.log for the n-th process started in dir.
func Start(bin, dir, kubeconfig string, workers int, pprof bool, extra ...string) (*Process, error) {
	metricsAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	healthAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	debugAddr, err := FreeAddr() // each engine its own: several run on one machine
	if err != nil {
		return nil, err
	}
	args := []string{"run", "--kubeconfig", kubeconfig, "--workers", strconv.Itoa(workers),
		"--qps", "1e6", "--burst", "1000000", "--log-level", "warn",
		"--metrics-addr", metricsAddr, "--health-addr", healthAddr, "--debug-addr", debugAddr, "--leader-elect=false"}
	logPath := filepath.Join(dir, "engine.log")
	for n := 2; ; n++ {
		if _, err := os.Stat(logPath); os.IsNotExist(err) {
			break
		}
		logPath = filepath.Join(dir, fmt.Sprintf("engine-%d.log", n))
	}
	e := &Process{log: logPath, metrics: "http://" + metricsAddr + "/metrics", health: "http://" + healthAddr,
		exited: make(chan struct{})}
	if pprof {
		if e.pprofAddr, err = FreeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-addr", e.pprofAddr)
	}
	args = append(args, extra...)
	if err := e.exec(bin, args, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// Exec runs another controller, bin with args and the environment env added to this
// process's, as its own process measured as the engine is (Pid, Stop, Running, LogTail; it
// has no /metrics). Its log is dir/<name>.log.
func Exec(dir, name, bin string, env []string, args ...string) (*Process, error) {
	p := &Process{log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	if err := p.exec(bin, args, env); err != nil {
		return nil, err
	}
	return p, nil
}

// exec starts bin with its output in e.log and watches for its exit.
func (e *Process) exec(bin string, args, env []string) error {
	logFile, err := os.Create(e.log)
	if err != nil {
		return err
	}
	e.cmd = exec.Command(bin, args...)
	e.cmd.Stdout, e.cmd.Stderr = logFile, logFile
	if env != nil {
		e.cmd.Env = append(os.Environ(), env...)
	}
	if err := e.cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	go func() {
		e.err = e.cmd.Wait()
		logFile.Close()
		close(e.exited)
	}()
	return nil
}

// Stop sends SIGTERM and waits for the engine to exit, killing it after 30 seconds.
func (e *Process) Stop() {
	select {
	case <-e.exited:
		return
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exited
	}
}

// Running returns an error, with the end of the process's log, once it has exited.
func (e *Process) Running() error {
	select {
	case <-e.exited:
		return fmt.Errorf("%s exited: %v; its log ends:\n%s", filepath.Base(e.cmd.Path), e.err, e.LogTail())
	default:
		return nil
	}
}

// Ready reports whether the engine's /readyz answers 200: it leads (with leader election)
// and has started its controllers.
func (e *Process) Ready(ctx context.Context) bool {
	resp, err := get(ctx, e.health+"/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// Kill ends the engine with SIGKILL: no shutdown at all.
func (e *Process) Kill() {
	_ = e.cmd.Process.Kill()
	<-e.exited
}

// Exited reports whether the process has exited, and its Wait error.
func (e *Process) Exited() (bool, error) {
	select {
	case <-e.exited:
		return true, e.err
	default:
		return false, nil
	}
}

// Pid is the engine's process ID.
func (e *Process) Pid() int { return e.cmd.Process.Pid }

// MetricsAddr is the host:port of the engine's /metrics.
func (e *Process) MetricsAddr() string {
	return strings.TrimSuffix(strings.TrimPrefix(e.metrics, "http://"), "/metrics")
}

// PprofAddr is the address of the engine's pprof server; empty unless started with pprof.
func (e *Process) PprofAddr() string { return e.pprofAddr }

// LogFile is the file holding the process's output.
func (e *Process) LogFile() string { return e.log }

// LogTail is the end of the engine's log.
func (e *Process) LogTail() string {
	data, _ := os.ReadFile(e.log)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// get GETs url and returns the response of a 200; any other status is an error.
func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

// save writes the body of a GET of url to file.
func save(ctx context.Context, url, file string) error {
	resp, err := get(ctx, url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// metricLines calls each with every line of the engine's /metrics, stopping at its error.
func (e *Process) metricLines(ctx context.Context, each func(line string) error) error {
	resp, err := get(ctx, e.metrics)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if err := each(sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Metric reads the engine's /metrics and returns the value of each series named in want
// (name and labels as the text format writes them, such as
// `metascript_workqueue_depth{name="compositecontroller/scale"}`); a series not there is 0.
func (e *Process) Metric(ctx context.Context, want ...string) ([]float64, error) {
	out := make([]float64, len(want))
	err := e.metricLines(ctx, func(line string) error {
		for i, w := range want {
			if rest, ok := strings.CutPrefix(line, w+" "); ok {
				v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
				if err != nil {
					return fmt.Errorf("%s: %w", line, err)
				}
				out[i] = v
			}
		}
		return nil
	})
	return out, err
}

// Profile saves a CPU profile of seconds seconds from the engine's pprof server to file,
// waiting for the server to listen first.
func (e *Process) Profile(ctx context.Context, seconds int, file string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.pprofAddr, seconds)
	for {
		err := save(ctx, url, file)
		var ne *net.OpError
		if !errors.As(err, &ne) || ctx.Err() != nil || e.Running() != nil {
			return err // saved, refused by the server, or nothing left to wait for
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Heap runs a collection in the engine, saves its heap profile from the pprof server to
// file, and returns the live heap: the bytes of heap objects (HeapAlloc) just after.
func (e *Process) Heap(ctx context.Context, file string) (live uint64, err error) {
	if err := save(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", e.pprofAddr), file); err != nil {
		return 0, err
	}
	resp, err := get(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?debug=1", e.pprofAddr))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no HeapAlloc in the engine's heap profile")
}

// MetricSum reads the engine's /metrics and returns, for each metric name in names, the sum
// of all its series (every label value); a metric not there is 0.
func (e *Process) MetricSum(ctx context.Context, names ...string) ([]float64, error) {
	out := make([]float64, len(names))
	err := e.metricLines(ctx, func(line string) error {
		for i, n := range names {
			value, ok := seriesValue(line, n)
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", line, err)
			}
			out[i] += v
		}
		return nil
	})
	return out, err
}

// MetricCount reads the engine's /metrics and returns how many series of the metric name it
// has (one per label value).
func (e *Process) MetricCount(ctx context.Context, name string) (int, error) {
	n := 0
	err := e.metricLines(ctx, func(line string) error {
		if _, ok := seriesValue(line, name); ok {
			n++
		}
		return nil
	})
	return n, err
}

// seriesValue returns the value of line when it is a series of the metric name.
func seriesValue(line, name string) (string, bool) {
	rest, ok := strings.CutPrefix(line, name)
	if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
		return "", false
	}
	f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

// FreeAddr is a local TCP address free to listen on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100
// on every Linux the benchmark runs on.
const clockTicks = 100

// CPUSeconds is the user plus system CPU time a process has used, from /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from after it.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicks, nil
}

// PeakRSS is a process's peak resident set size in bytes (VmHWM in /proc/<pid>/status).
func PeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// MachineCPU is the CPU time every processor of the machine has spent busy, and the time
// the hypervisor gave to other guests (steal), in seconds, from /proc/stat: with the
// processes measured subtracted, what else ran on the machine meanwhile.
func MachineCPU() (busy, steal float64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			return 0, 0, err
		}
	}
	busy = float64(v[0]+v[1]+v[2]+v[5]+v[6]) / clockTicks
	return busy, float64(v[7]) / clockTicks, nil
}
