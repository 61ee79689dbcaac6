package isolated

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"

	"metascript.dev/metascript/scripting"
)

// The protocol between the engine and a worker, over the worker's stdin (requests) and
// stdout (answers). A frame is a 4-byte big-endian length, then that many bytes: a message
// type, then its fields in the encoding of codec.go. A worker serves one request at a time:
//
//	engine → worker: config (once, first), then compile or call; cancel at any time
//	worker → engine: ready (after config); compiled (for compile); for a call, any number of
//	                 log frames, then result or needSource
//
// cancel carries the sequence number of the call it cancels; a worker ignores a cancel for
// any call but the one it runs, so a late cancel never touches the next call.
const (
	msgConfig byte = iota + 1
	msgCompile
	msgCall
	msgCancel
	msgReady
	msgCompiled
	msgLog
	msgResult
	msgNeedSource
)

// maxFrame bounds one frame. A hook's result is bounded by its output budget long before;
// a larger frame means a broken or hostile peer.
const maxFrame = 1 << 30

// workerConfig is the config message: the budget policy of the worker's Runtime and the
// operating-system limits the worker sets on itself before it reads anything else.
type workerConfig struct {
	Defaults, Ceilings scripting.Budget
	// MemoryLimit is what the worker's RLIMIT_AS allows above the address space it has at
	// start-up, in bytes; 0 sets none (a cgroup limits it). The ready frame carries that
	// start-up address space.
	MemoryLimit int64
	// GoMemoryLimit is the worker's debug.SetMemoryLimit; 0 leaves the default.
	GoMemoryLimit int64
	// CPUSeconds is the CPU time one call may use (RLIMIT_CPU, moved before each call); 0 sets none.
	CPUSeconds int64
}

// callRequest is the call message.
type callRequest struct {
	Seq      uint64
	Lang     scripting.Language
	Name     string
	Sum      [32]byte
	Source   string // empty unless the engine believes the worker lacks the program
	Function string
	Request  map[string]any
	Budget   scripting.Budget
	// NowUnixNano is the caller's clock at the call, 0 for the worker's own clock.
	NowUnixNano int64
	// LogLevel is the least level the caller's logger takes; Log false sends no log frames.
	Log      bool
	LogLevel slog.Level
}

// writeFrame writes one frame of type typ whose payload is body.
func writeFrame(w io.Writer, typ byte, body []byte) error {
	if len(body)+1 > maxFrame {
		return fmt.Errorf("isolated: frame of %d bytes exceeds the protocol's %d", len(body)+1, maxFrame)
	}
	buf := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)+1))
	buf[4] = typ
	_, err := w.Write(append(buf, body...))
	return err
}

// readFrame reads one frame and returns its type and payload.
func readFrame(r io.Reader) (byte, []byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n == 0 || n > maxFrame {
		return 0, nil, fmt.Errorf("isolated: frame length %d out of range", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return buf[0], buf[1:], nil
}

func (c workerConfig) encode() []byte {
	var e encoder
	e.budget(c.Defaults)
	e.budget(c.Ceilings)
	e.varint(c.MemoryLimit)
	e.varint(c.GoMemoryLimit)
	e.varint(c.CPUSeconds)
	return e.b
}

func decodeConfig(b []byte) (workerConfig, error) {
	d := decoder{b: b}
	c := workerConfig{Defaults: d.budget(), Ceilings: d.budget(), MemoryLimit: d.varint(), GoMemoryLimit: d.varint(), CPUSeconds: d.varint()}
	return c, d.err
}

func (c *callRequest) encode() ([]byte, error) {
	var e encoder
	e.uvarint(c.Seq)
	e.string(string(c.Lang))
	e.string(c.Name)
	e.b = append(e.b, c.Sum[:]...)
	e.string(c.Source)
	e.string(c.Function)
	if err := e.value(c.Request); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	e.budget(c.Budget)
	e.varint(c.NowUnixNano)
	e.bool(c.Log)
	e.varint(int64(c.LogLevel))
	return e.b, nil
}

func decodeCall(b []byte) (*callRequest, error) {
	d := decoder{b: b}
	c := &callRequest{Seq: d.uvarint(), Lang: scripting.Language(d.string()), Name: d.string()}
	if len(d.b) < 32 {
		return nil, errShort
	}
	copy(c.Sum[:], d.b)
	d.b = d.b[32:]
	c.Source, c.Function = d.string(), d.string()
	req, _ := d.value(0).(map[string]any)
	c.Request = req
	c.Budget = d.budget()
	c.NowUnixNano = d.varint()
	c.Log = d.bool()
	c.LogLevel = slog.Level(d.varint())
	return c, d.err
}
