// Package isolated is the engine's isolated tier: it runs the inline hooks of controllers
// that set spec.isolation: Process in a pool of worker processes under operating-system
// limits, so that a hook that escapes the in-process budgets (a memory bomb past the process
// limit, a crash of the interpreter) kills a worker, never the engine.
//
// A worker is the engine's own binary re-executed with a hidden subcommand (`metascript
// hook-worker`, which calls Serve). It runs a scripting.Runtime with the engine's budget
// policy, so every budget (timeout, steps, memory, output) applies inside it exactly as
// in-process; the operating-system limit is the backstop: a cgroup v2 per worker
// (memory.max, cpu.max) where the engine may make one, RLIMIT_AS otherwise, and RLIMIT_CPU
// per call. The protocol is in protocol.go, its encoding in codec.go.
//
// Compile runs in a worker too: parsing is where a hostile source first runs code of the
// interpreter (a deeply nested expression, a pathological literal), and the worker's
// *scripting.CompileError crosses field by field, so its positions are those of an
// in-process compile. The Pool remembers each source's functions or compile error, so a
// source is compiled in a worker once per Pool, and again in each worker at its first call
// there.
package isolated

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"metascript.dev/metascript/scripting"
)

// ErrClosed is returned by calls on a closed Pool.
var ErrClosed = errors.New("isolated: the pool is closed")

// Options configure a Pool.
type Options struct {
	// Command returns the command that starts one worker: the engine's binary with the
	// hook-worker subcommand. Its stdin, stdout and stderr are the Pool's to set.
	Command func() *exec.Cmd
	// Workers is the number of worker processes; at least 1.
	Workers int
	// MemoryLimit is each worker's memory limit in bytes: memory.max of its cgroup, or what
	// its RLIMIT_AS allows above the address space it has at start-up (see applyLimits);
	// at least MinMemoryLimit. Negative: no limit (tests measure with it).
	MemoryLimit int64
	// CPUTime is the CPU time one call may use (RLIMIT_CPU, whole seconds); 0: none.
	CPUTime time.Duration
	// CPUs is each worker's CPU rate under cgroup v2 (cpu.max), in CPUs; 0: none.
	CPUs float64
	// Cgroups decides whether workers get cgroups; nil never (RLIMIT_AS is used).
	Cgroups *CgroupPlan
	// Defaults and Ceilings are the budget policy, as the engine's scripting.Options.
	Defaults, Ceilings scripting.Budget
	// Grace is how long a call may run past its budget's timeout, or past its context's end,
	// before its worker is killed; default 2s.
	Grace time.Duration
	// CompileTimeout bounds a Compile, waiting for a worker included; default 30s.
	CompileTimeout time.Duration
	// Log receives worker restarts; nil discards.
	Log *slog.Logger
	// Restarted, when set, is called each time a worker is replaced, with why: "memory",
	// "cpu", "timeout", "cancelled", "crash".
	Restarted func(reason string)
	// Called, when set, is called after each call with its outcome: "success", "error"
	// (the hook failed in the worker, typed as in-process) or "worker" (the worker died).
	Called func(outcome string)
}

// MinMemoryLimit is the least MemoryLimit a Pool accepts: what a healthy worker adds to its
// start-up address space while it runs the benchmarks' sync hooks at 1000 children in both
// languages is about 210 MiB (measured, floor_test.go: heap arenas, reserved 64 MiB at a
// time, and thread stacks included), and it runs them under this limit.
const MinMemoryLimit = 256 << 20

// Pool runs isolated hook calls in worker processes. It implements hooks.Compiler. It is safe
// for concurrent use; each worker runs one call at a time and callers wait for a free one.
type Pool struct {
	opts   Options
	policy *scripting.Runtime // budget policy only: no compilers
	free   chan *worker       // a dead entry is a slot whose worker must be started
	closed chan struct{}
	once   sync.Once
	starts sync.WaitGroup // replacements starting in the background

	mu       sync.Mutex
	isClosed bool
	all      map[*worker]struct{}
	sources  map[sourceKey]*compiled
	slots    []*cgroupSlot
	seq      atomic.Uint64
}

type sourceKey struct {
	lang scripting.Language
	sum  [32]byte
}

// compiled is what a worker answered for one source.
type compiled struct {
	name      string
	functions []string
	err       error
}

// New starts a Pool and its first worker, so that a configuration no worker can run under
// (a memory limit below what the Go runtime needs) is an error here; the other workers start
// on first use.
func New(opts Options) (*Pool, error) {
	if opts.Workers < 1 {
		return nil, errors.New("isolated: at least one worker")
	}
	if opts.Command == nil {
		return nil, errors.New("isolated: no worker command")
	}
	if opts.MemoryLimit > 0 && opts.MemoryLimit < MinMemoryLimit && opts.Cgroups == nil {
		return nil, fmt.Errorf("isolated: memory limit %s is below the %s a worker needs under RLIMIT_AS",
			quantity(opts.MemoryLimit), quantity(MinMemoryLimit))
	}
	if opts.Grace <= 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.CompileTimeout <= 0 {
		opts.CompileTimeout = 30 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{
		opts:    opts,
		policy:  scripting.NewRuntime(scripting.Options{Defaults: opts.Defaults, Ceilings: opts.Ceilings}),
		free:    make(chan *worker, opts.Workers),
		closed:  make(chan struct{}),
		all:     map[*worker]struct{}{},
		sources: map[sourceKey]*compiled{},
	}
	if opts.Cgroups != nil {
		slots, err := opts.Cgroups.slots(opts.Workers, opts.MemoryLimit, opts.CPUs)
		if err != nil {
			return nil, err
		}
		p.slots = slots
	}
	for i := range opts.Workers {
		if i == 0 {
			w, err := p.start(0)
			if err != nil {
				p.Close()
				return nil, err
			}
			p.free <- w
			continue
		}
		p.free <- &worker{slot: i, dead: true}
	}
	return p, nil
}

// Close kills every worker and waits for each to end; calls in flight fail with a
// *scripting.WorkerError, later calls with ErrClosed. It is safe to call more than once.
func (p *Pool) Close() error {
	p.once.Do(func() { close(p.closed) })
	p.mu.Lock()
	p.isClosed = true
	all := make([]*worker, 0, len(p.all))
	for w := range p.all {
		all = append(all, w)
	}
	p.mu.Unlock()
	for _, w := range all {
		w.stop()
	}
	p.starts.Wait()
	for _, s := range p.slots {
		s.remove()
	}
	return nil
}

// acquire takes a free worker, starting it if its slot has none.
func (p *Pool) acquire(ctx context.Context) (*worker, error) {
	select {
	case <-p.closed:
		return nil, ErrClosed
	default:
	}
	var w *worker
	select {
	case w = <-p.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.closed:
		return nil, ErrClosed
	}
	if !w.dead {
		return w, nil
	}
	nw, err := p.start(w.slot)
	if err != nil {
		p.free <- w
		return nil, err
	}
	return nw, nil
}

// release gives a healthy worker back.
func (p *Pool) release(w *worker) { p.free <- w }

// register records a started worker so that Close stops it; false when the Pool is closed.
func (p *Pool) register(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isClosed {
		return false
	}
	p.all[w] = struct{}{}
	return true
}

func (p *Pool) unregister(w *worker) {
	p.mu.Lock()
	delete(p.all, w)
	p.mu.Unlock()
}

// replace ends a worker that died or was given up on and starts its replacement in the
// background, so that the failed call returns at once and the next call finds it ready.
func (p *Pool) replace(w *worker, reason string) {
	w.stop()
	p.unregister(w)
	if p.opts.Restarted != nil {
		p.opts.Restarted(reason)
	}
	p.opts.Log.Warn("isolated hook worker replaced", "reason", reason, "pid", w.pid)
	p.starts.Add(1)
	go func() {
		defer p.starts.Done()
		nw, err := p.start(w.slot)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				p.opts.Log.Error("isolated hook worker did not start", "error", err.Error())
			}
			nw = &worker{slot: w.slot, dead: true}
		}
		p.free <- nw
	}()
}

// Compile compiles source in a worker (once per source and Pool) and returns a Program whose
// calls run in the workers. A compile error is the worker's *scripting.CompileError, named
// name. It implements hooks.Compiler.
func (p *Pool) Compile(lang scripting.Language, name, source string) (scripting.Program, error) {
	key := sourceKey{lang: lang, sum: sha256.Sum256([]byte(source))}
	p.mu.Lock()
	c := p.sources[key]
	p.mu.Unlock()
	if c == nil {
		var err error
		if c, err = p.compile(lang, name, source); err != nil {
			return nil, err
		}
		p.mu.Lock()
		if len(p.sources) >= maxWorkerPrograms {
			clear(p.sources)
		}
		p.sources[key] = c
		p.mu.Unlock()
	}
	if c.err != nil {
		var ce *scripting.CompileError
		if errors.As(c.err, &ce) && ce.File != name {
			cp := *ce
			cp.File = name
			return nil, &cp
		}
		return nil, c.err
	}
	return &program{pool: p, lang: lang, name: name, sum: key.sum, source: source, functions: c.functions}, nil
}

// compile asks a worker; an error is the worker's, not the source's.
func (p *Pool) compile(lang scripting.Language, name, source string) (*compiled, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.CompileTimeout)
	defer cancel()
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("isolated: compile %s: %w", name, err)
	}
	var e encoder
	e.string(string(lang))
	e.string(name)
	e.string(source)
	f, err := w.roundTrip(ctx, msgCompile, e.b, 0, 0, nil)
	if err != nil {
		p.replace(w, w.reason(err))
		return nil, w.failure(lang, err)
	}
	d := decoder{b: f.body}
	c := &compiled{name: name, err: d.error()}
	if c.err == nil {
		n := d.length(1)
		for range n {
			c.functions = append(c.functions, d.string())
		}
		w.known[programKey{lang: lang, sum: sha256.Sum256([]byte(source)), name: name}] = true
	}
	p.release(w)
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// program is a source compiled in the workers.
type program struct {
	pool      *Pool
	lang      scripting.Language
	name      string
	sum       [32]byte
	source    string
	functions []string
}

func (p *program) Language() scripting.Language { return p.lang }
func (p *program) Functions() []string          { return append([]string(nil), p.functions...) }

// Call runs inv in a free worker, waiting for one (ctx ends the wait). The worker applies the
// budget policy as in-process; the hook's log lines are replayed into inv.Log; a hook reading
// the clock sees inv.Now at the call plus the time elapsed in the worker. If ctx ends, the
// worker is asked to stop the call and is killed and replaced if it does not answer within
// the Pool's grace; likewise if the call runs past its budget's timeout plus grace. A worker
// that dies fails the call with a *scripting.WorkerError and is replaced.
func (p *program) Call(ctx context.Context, inv scripting.Invocation) (any, error) {
	pool := p.pool
	w, err := pool.acquire(ctx)
	if err != nil {
		return nil, err
	}
	key := programKey{lang: p.lang, sum: p.sum, name: p.name}
	req := &callRequest{Seq: pool.seq.Add(1), Lang: p.lang, Name: p.name, Sum: p.sum, Function: inv.Function,
		Request: inv.Request, Budget: inv.Budget}
	if !w.known[key] {
		req.Source = p.source
	}
	if inv.Now != nil {
		req.NowUnixNano = inv.Now().UnixNano()
	}
	if inv.Log != nil {
		req.Log = true
		for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			if inv.Log.Enabled(ctx, l) {
				req.LogLevel = l
				break
			}
			req.LogLevel = l + 1
		}
	}
	body, err := req.encode()
	if err != nil {
		pool.release(w)
		return nil, err
	}
	timeout := pool.policy.EffectiveBudget(inv.Budget).Timeout + pool.opts.Grace
	replay := func(f frame) (resend bool) {
		switch f.typ {
		case msgLog:
			replayLog(ctx, inv.Log, f.body)
		case msgNeedSource:
			return true
		}
		return false
	}
	f, err := w.roundTrip(ctx, msgCall, body, req.Seq, timeout, replay)
	if errors.Is(err, errResend) {
		req.Source = p.source
		if body, err = req.encode(); err == nil {
			f, err = w.roundTrip(ctx, msgCall, body, req.Seq, timeout, replay)
		}
	}
	if err != nil {
		pool.replace(w, w.reason(err))
		pool.called("worker")
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, w.failure(p.lang, err)
	}
	w.known[key] = true
	pool.release(w)
	d := decoder{b: f.body}
	d.uvarint()
	callErr := d.error()
	var v any
	if callErr == nil {
		v = d.value(0)
	}
	if d.err != nil {
		return nil, d.err
	}
	if ctx.Err() != nil {
		// Cancelled and answered within the grace: the worker is healthy, the call is not.
		pool.called("error")
		return nil, ctx.Err()
	}
	if callErr != nil {
		pool.called("error")
		return nil, callErr
	}
	pool.called("success")
	return v, nil
}

func (p *Pool) called(outcome string) {
	if p.opts.Called != nil {
		p.opts.Called(outcome)
	}
}

// replayLog logs one forwarded record into log.
func replayLog(ctx context.Context, log *slog.Logger, body []byte) {
	if log == nil {
		return
	}
	d := decoder{b: body}
	level, msg := slog.Level(d.varint()), d.string()
	n := d.length(2)
	attrs := make([]slog.Attr, 0, n)
	for range n {
		k := d.string()
		attrs = append(attrs, slog.Any(k, d.value(0)))
	}
	if d.err == nil {
		log.LogAttrs(ctx, level, msg, attrs...)
	}
}

func quantity(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// stderrKept is how much of a worker's stderr is kept to explain its death: the start of a
// Go fatal error names its cause.
const stderrKept = 16 << 10

// keepHead keeps the first stderrKept bytes written to it and drops the rest.
type keepHead struct {
	mu  sync.Mutex
	buf []byte
}

func (k *keepHead) Write(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if room := stderrKept - len(k.buf); room > 0 {
		k.buf = append(k.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

func (k *keepHead) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return string(k.buf)
}
