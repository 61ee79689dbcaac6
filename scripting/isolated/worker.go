package isolated

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/javascript"
	"metascript.dev/metascript/scripting/starlark"
)

// Exit codes of a worker, read by the Pool to name why it ended.
const (
	// exitProtocol: the engine sent something the worker could not read.
	exitProtocol = 3
	// exitLimits: the worker could not set its operating-system limits.
	exitLimits = 4
	// exitCPU: the call ran past its CPU time (RLIMIT_CPU's SIGXCPU).
	exitCPU = 5
)

// maxWorkerPrograms bounds the programs a worker keeps compiled; past it the worker forgets
// them all and asks the engine for a source again when a call names one it lacks.
const maxWorkerPrograms = 1024

// programKey names a compiled program in a worker: the same source compiled under another
// name is another entry, so that positions and stack frames carry the caller's name (the
// Runtime shares the compiled code underneath).
type programKey struct {
	lang scripting.Language
	sum  [32]byte
	name string
}

// Serve is a worker's main: it reads requests from in and writes answers to out until in
// ends, and returns the process exit code. It must run in a process of its own (the engine's
// binary, `metascript hook-worker`): it sets that process's operating-system limits from the
// config frame before it reads anything else, and a hook that escapes its budgets ends the
// process.
func Serve(in io.Reader, out io.Writer) int {
	typ, body, err := readFrame(in)
	if err != nil || typ != msgConfig {
		fmt.Fprintf(os.Stderr, "metascript hook-worker: want a config frame first: %v\n", err)
		return exitProtocol
	}
	cfg, err := decodeConfig(body)
	if err != nil {
		fmt.Fprintf(os.Stderr, "metascript hook-worker: config: %v\n", err)
		return exitProtocol
	}
	cpu, base, err := applyLimits(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "metascript hook-worker: limits: %v\n", err)
		return exitLimits
	}
	w := &server{
		out:      out,
		rt:       scripting.NewRuntime(scripting.Options{Defaults: cfg.Defaults, Ceilings: cfg.Ceilings}, starlark.NewCompiler(), javascript.NewCompiler()),
		programs: map[programKey]scripting.Program{},
		cpu:      cpu,
	}
	var ready encoder
	ready.varint(base)
	if err := w.send(msgReady, ready.b); err != nil {
		return exitProtocol
	}
	requests := make(chan frame)
	go w.read(in, requests)
	for f := range requests {
		if err := w.handle(f); err != nil {
			fmt.Fprintf(os.Stderr, "metascript hook-worker: %v\n", err)
			return exitProtocol
		}
	}
	return 0
}

type frame struct {
	typ  byte
	body []byte
}

// server is a worker's state. Requests are handled one at a time by Serve's goroutine;
// cancels are handled by the reading goroutine as they arrive.
type server struct {
	out      io.Writer
	writeMu  sync.Mutex // log frames may come from the hook's goroutine
	rt       *scripting.Runtime
	programs map[programKey]scripting.Program
	cpu      *cpuLimit

	mu      sync.Mutex
	running uint64 // the call's sequence number, 0 when none runs
	cancel  context.CancelFunc
}

// read passes requests on and applies cancels; it closes requests when in ends.
func (s *server) read(in io.Reader, requests chan<- frame) {
	defer close(requests)
	for {
		typ, body, err := readFrame(in)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "metascript hook-worker: read: %v\n", err)
			}
			s.cancelRunning(0)
			return
		}
		if typ == msgCancel {
			d := decoder{b: body}
			if seq := d.uvarint(); d.err == nil && seq != 0 {
				s.cancelRunning(seq)
			}
			continue
		}
		requests <- frame{typ, body}
	}
}

// cancelRunning cancels the running call if its sequence number is seq (any call for 0).
func (s *server) cancelRunning(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil && (seq == 0 || seq == s.running) {
		s.cancel()
	}
}

func (s *server) send(typ byte, body []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return writeFrame(s.out, typ, body)
}

func (s *server) handle(f frame) error {
	switch f.typ {
	case msgCompile:
		d := decoder{b: f.body}
		lang, name, source := scripting.Language(d.string()), d.string(), d.string()
		if d.err != nil {
			return d.err
		}
		var e encoder
		prog, err := s.compile(programKey{lang: lang, sum: sha256.Sum256([]byte(source)), name: name}, source)
		e.error(err)
		if err == nil {
			fns := prog.Functions()
			e.uvarint(uint64(len(fns)))
			for _, fn := range fns {
				e.string(fn)
			}
		}
		return s.send(msgCompiled, e.b)
	case msgCall:
		req, err := decodeCall(f.body)
		if err != nil {
			return err
		}
		return s.call(req)
	}
	return fmt.Errorf("unexpected message type %d", f.typ)
}

func (s *server) compile(key programKey, source string) (scripting.Program, error) {
	if p, ok := s.programs[key]; ok {
		return p, nil
	}
	p, err := s.rt.Compile(key.lang, key.name, source)
	if err != nil {
		return nil, err
	}
	if len(s.programs) >= maxWorkerPrograms {
		clear(s.programs)
	}
	s.programs[key] = p
	return p, nil
}

func (s *server) call(req *callRequest) error {
	key := programKey{lang: req.Lang, sum: req.Sum, name: req.Name}
	prog, ok := s.programs[key]
	if !ok {
		if req.Source == "" {
			var e encoder
			e.uvarint(req.Seq)
			return s.send(msgNeedSource, e.b)
		}
		var err error
		if prog, err = s.compile(key, req.Source); err != nil {
			return s.result(req.Seq, nil, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.mu.Lock()
	s.running, s.cancel = req.Seq, cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running, s.cancel = 0, nil
		s.mu.Unlock()
	}()
	inv := scripting.Invocation{Function: req.Function, Request: req.Request, Budget: req.Budget}
	if req.Log {
		inv.Log = slog.New(&logForwarder{s: s, level: req.LogLevel})
	}
	if req.NowUnixNano != 0 {
		base, start := time.Unix(0, req.NowUnixNano), time.Now()
		inv.Now = func() time.Time { return base.Add(time.Since(start)) }
	}
	if err := s.cpu.arm(); err != nil {
		return err
	}
	v, err := prog.Call(ctx, inv)
	return s.result(req.Seq, v, err)
}

func (s *server) result(seq uint64, v any, err error) error {
	var e encoder
	e.uvarint(seq)
	e.error(err)
	if err == nil {
		if encErr := e.value(v); encErr != nil {
			// The runtime converts results to the JSON shape; anything else is a bug.
			e = encoder{}
			e.uvarint(seq)
			e.error(encErr)
		}
	}
	return s.send(msgResult, e.b)
}

// logForwarder is the hook's logger inside a worker: each record becomes a log frame that
// the engine replays into the caller's logger, which adds the controller and object.
type logForwarder struct {
	s      *server
	level  slog.Level
	attrs  []slog.Attr
	prefix string
}

func (h *logForwarder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logForwarder) Handle(_ context.Context, r slog.Record) error {
	var e encoder
	e.varint(int64(r.Level))
	e.string(r.Message)
	attrs := append([]slog.Attr(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
		return true
	})
	e.uvarint(uint64(len(attrs)))
	for _, a := range attrs {
		e.string(a.Key)
		if e.value(logValue(a.Value)) != nil {
			e.b[len(e.b)-1] = tagNil
		}
	}
	return h.s.send(msgLog, e.b)
}

func (h *logForwarder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	for i := len(h.attrs); i < len(c.attrs); i++ {
		c.attrs[i].Key = h.prefix + c.attrs[i].Key
	}
	return &c
}

func (h *logForwarder) WithGroup(name string) slog.Handler {
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

// logValue is v in the JSON shape; what has none crosses as its text.
func logValue(v slog.Value) any {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindInt64:
		return v.Int64()
	case slog.KindFloat64:
		return v.Float64()
	case slog.KindBool:
		return v.Bool()
	case slog.KindAny:
		switch a := v.Any().(type) {
		case nil, map[string]any, []any, int64, float64:
			var e encoder
			if e.value(a) == nil {
				return a
			}
		}
	}
	return v.String()
}
