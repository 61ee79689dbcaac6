package isolated

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"metascript.dev/metascript/scripting"
)

// startTimeout bounds a worker's start, up to its ready frame.
const startTimeout = 30 * time.Second

// Why a round trip with a worker ended without an answer.
var (
	errDied      = errors.New("the worker ended")
	errTimeout   = errors.New("the worker did not answer within its budget's timeout plus grace")
	errCancelled = errors.New("the worker did not stop the cancelled call within the grace")
	errResend    = errors.New("the worker asks for the source")
)

// worker is one worker process. It is used by one call at a time (the one that took it
// from the Pool), except stop, which Close may call at any time.
type worker struct {
	slot int
	dead bool // a placeholder for a slot whose worker must be started
	pid  int

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	frames chan frame // answers; closed when stdout ends
	stderr *keepHead
	cgroup *cgroupSlot
	oom    int64 // the cgroup's oom_kill count when the worker started
	known  map[programKey]bool
	limits string // what limits the worker's memory, for messages: "RLIMIT_AS 1536Mi"

	stopOnce sync.Once
	waitErr  error
}

// start starts the worker of slot and waits for it to be ready: its limits are set.
func (p *Pool) start(slot int) (*worker, error) {
	p.mu.Lock()
	closed := p.isClosed
	p.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	w := &worker{slot: slot, frames: make(chan frame), stderr: &keepHead{}, known: map[programKey]bool{}}
	cfg := workerConfig{Defaults: p.opts.Defaults, Ceilings: p.opts.Ceilings}
	cmd := p.opts.Command()
	cmd.Stderr = w.stderr
	if slot < len(p.slots) {
		w.cgroup = p.slots[slot]
		if err := w.cgroup.attach(cmd); err != nil {
			return nil, err
		}
		w.oom = w.cgroup.oomKills()
		w.limits = "cgroup memory.max " + quantity(p.opts.MemoryLimit)
		// The collector works harder near the cgroup's limit instead of being killed at it.
		cfg.GoMemoryLimit = p.opts.MemoryLimit / 10 * 9
	} else if p.opts.MemoryLimit > 0 {
		cfg.MemoryLimit = p.opts.MemoryLimit
		cfg.GoMemoryLimit = p.opts.MemoryLimit / 10 * 9
	}
	if p.opts.CPUTime > 0 {
		cfg.CPUSeconds = int64((p.opts.CPUTime + time.Second - 1) / time.Second)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("isolated: start worker: %w", err)
	}
	w.cmd, w.stdin, w.pid = cmd, stdin, cmd.Process.Pid
	go w.read(bufio.NewReaderSize(stdout, 64<<10))
	if !p.register(w) {
		w.stop()
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	f, err := w.roundTrip(ctx, msgConfig, cfg.encode(), 0, 0, nil)
	if err == nil && f.typ != msgReady {
		err = fmt.Errorf("message type %d instead of ready", f.typ)
	}
	if err != nil {
		w.stop()
		p.unregister(w)
		return nil, fmt.Errorf("isolated: worker did not start: %w", w.failure("", err))
	}
	if cfg.MemoryLimit > 0 {
		d := decoder{b: f.body}
		w.limits = fmt.Sprintf("RLIMIT_AS %s above its start-up %s", quantity(cfg.MemoryLimit), quantity(d.varint()))
	}
	return w, nil
}

// read passes the worker's frames on until its stdout ends.
func (w *worker) read(r io.Reader) {
	defer close(w.frames)
	for {
		typ, body, err := readFrame(r)
		if err != nil {
			return
		}
		w.frames <- frame{typ, body}
	}
}

// roundTrip sends one request and waits for its answer (ready, compiled or result),
// passing other frames to onFrame; onFrame returning true ends it with errResend. If ctx
// ends first, a call (seq != 0) is cancelled in the worker and its answer awaited for the
// grace; timeout > 0 bounds the whole wait. An error but errResend leaves the worker unfit
// for another request: the caller replaces it.
func (w *worker) roundTrip(ctx context.Context, typ byte, body []byte, seq uint64, timeout time.Duration, onFrame func(frame) bool) (frame, error) {
	if err := writeFrame(w.stdin, typ, body); err != nil {
		return frame{}, errDied
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	done := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case f, ok := <-w.frames:
			switch {
			case !ok:
				return frame{}, errDied
			case f.typ == msgReady || f.typ == msgCompiled || f.typ == msgResult:
				return f, nil
			case onFrame != nil && onFrame(f):
				return frame{}, errResend
			}
		case <-done:
			if seq == 0 {
				return frame{}, errTimeout
			}
			var e encoder
			e.uvarint(seq)
			if writeFrame(w.stdin, msgCancel, e.b) != nil {
				return frame{}, errDied
			}
			done = nil
			t := time.NewTimer(graceOf(timeout))
			defer t.Stop()
			grace = t.C
		case <-grace:
			return frame{}, errCancelled
		case <-deadline:
			return frame{}, errTimeout
		}
	}
}

// graceOf is how long a cancelled call may take to answer.
func graceOf(timeout time.Duration) time.Duration {
	if timeout > 0 {
		return min(timeout, 2*time.Second)
	}
	return 2 * time.Second
}

// stop kills the process and waits for it; safe to call more than once and concurrently.
func (w *worker) stop() {
	if w.cmd == nil {
		return
	}
	w.stopOnce.Do(func() {
		_ = w.stdin.Close()
		_ = w.cmd.Process.Kill()
		for range w.frames { // the reader ends at EOF; Wait must come after
		}
		w.waitErr = w.cmd.Wait()
	})
}

// reason names why a worker is being replaced after err, for the restart metric; it stops
// the worker first, so that its exit status is known.
func (w *worker) reason(err error) string {
	switch {
	case errors.Is(err, errTimeout):
		return "timeout"
	case errors.Is(err, errCancelled):
		return "cancelled"
	}
	w.stop()
	limit, _ := w.diagnose()
	switch {
	case strings.HasPrefix(limit, "memory"):
		return "memory"
	case strings.HasPrefix(limit, "CPU"):
		return "cpu"
	}
	return "crash"
}

// diagnose names the limit the worker hit, if any, and how it ended. The worker has been
// stopped.
func (w *worker) diagnose() (limit, exit string) {
	st := w.cmd.ProcessState
	if st == nil {
		return "", ""
	}
	exit = st.String()
	ws, _ := st.Sys().(syscall.WaitStatus)
	out := w.stderr.String()
	switch {
	case ws.Exited() && ws.ExitStatus() == exitCPU, ws.Signaled() && ws.Signal() == syscall.SIGXCPU:
		return "CPU time (RLIMIT_CPU per call)", exit
	case outOfMemory(out):
		return "memory (" + w.limits + ")", exit
	case w.cgroup != nil && ws.Signaled() && ws.Signal() == syscall.SIGKILL && w.cgroup.oomKills() > w.oom:
		return "memory (" + w.limits + ")", exit
	}
	return "", exit
}

// outOfMemory says a worker's stderr reports an allocation refused: the Go runtime's fatal
// error, or the race detector's (ENOMEM is errno 12; no room left for its shadow memory).
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to allocate", "address space collisions"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// failure is the error a call that ended with err gets.
func (w *worker) failure(lang scripting.Language, err error) error {
	switch {
	case errors.Is(err, errTimeout), errors.Is(err, errCancelled):
		return &scripting.WorkerError{Language: lang, Limit: "wall-clock", Exit: err.Error()}
	case !errors.Is(err, errDied):
		return err
	}
	w.stop()
	limit, exit := w.diagnose()
	return &scripting.WorkerError{Language: lang, Limit: limit, Exit: exit, Detail: firstFatal(w.stderr.String())}
}

// firstFatal is the line of a worker's stderr that says why it ended: a Go fatal error or
// panic, the worker's own message, or else its first line.
func firstFatal(s string) string {
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		for _, p := range []string{"fatal error:", "panic:", "metascript hook-worker:", "runtime:", "==", "SIG"} {
			if strings.HasPrefix(l, p) {
				return truncate(l)
			}
		}
	}
	return truncate(strings.TrimSpace(lines[0]))
}

func truncate(s string) string {
	if len(s) > 512 {
		return s[:512] + "…"
	}
	return s
}
