package isolated

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"metascript.dev/metascript/scripting"
)

// The wire encoding of the protocol (see protocol.go). Values are the JSON shape, tagged:
// one byte of kind, then varints, IEEE 754 bits or length-prefixed bytes. It is hand-written
// rather than JSON or gob because the JSON shape distinguishes int64 from float64 (a Starlark
// 5 is not 5.0) and JSON would not keep that; because gob needs every interface type
// registered and sends type descriptors per stream; and because a decoder of a few tags is
// easy to bound: every length is checked against the bytes left, and nesting is capped, so
// a corrupt or hostile frame from a worker is an error, never a crash or a huge allocation.

const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagFloat
	tagString
	tagList
	tagMap
)

// maxDepth caps the nesting of a decoded value; the scripting runtime's own conversion
// refuses deeper values long before.
const maxDepth = 10000

// errShort is a frame that ends before its contents do.
var errShort = errors.New("isolated: truncated frame")

type encoder struct{ b []byte }

func (e *encoder) byte(c byte)      { e.b = append(e.b, c) }
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) string(s string)  { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bool(v bool) {
	if v {
		e.byte(1)
	} else {
		e.byte(0)
	}
}
func (e *encoder) duration(d time.Duration) { e.varint(int64(d)) }

// value encodes v, which must be of the JSON shape; integer types are widened to int64 and
// float32 to float64, as the scripting runtime accepts them.
func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.byte(tagNil)
	case bool:
		if x {
			e.byte(tagTrue)
		} else {
			e.byte(tagFalse)
		}
	case int64:
		e.byte(tagInt)
		e.varint(x)
	case int:
		e.byte(tagInt)
		e.varint(int64(x))
	case int32:
		e.byte(tagInt)
		e.varint(int64(x))
	case float64:
		e.byte(tagFloat)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(x))
	case float32:
		e.byte(tagFloat)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(float64(x)))
	case string:
		e.byte(tagString)
		e.string(x)
	case []any:
		e.byte(tagList)
		e.uvarint(uint64(len(x)))
		for _, el := range x {
			if err := e.value(el); err != nil {
				return err
			}
		}
	case map[string]any:
		e.byte(tagMap)
		e.uvarint(uint64(len(x)))
		for k, el := range x {
			e.string(k)
			if err := e.value(el); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("isolated: a %T is not of the JSON shape", v)
	}
	return nil
}

func (e *encoder) budget(b scripting.Budget) {
	e.duration(b.Timeout)
	e.uvarint(b.MaxSteps)
	e.varint(int64(b.MaxStackDepth))
	e.varint(b.MaxMemory)
	e.varint(b.MaxOutputBytes)
	e.varint(b.MaxOutputObjects)
}

func (e *encoder) stack(frames []scripting.Frame) {
	e.uvarint(uint64(len(frames)))
	for _, f := range frames {
		e.string(f.Function)
		e.string(f.File)
		e.varint(int64(f.Line))
		e.varint(int64(f.Column))
	}
}

// Error kinds on the wire.
const (
	errNone byte = iota
	errCompile
	errRuntime
	errBudget
	errOutput
	errOther
)

// error encodes err, keeping the scripting package's typed errors typed. Any other error
// crosses as its message.
func (e *encoder) error(err error) {
	var (
		ce *scripting.CompileError
		re *scripting.RuntimeError
		be *scripting.BudgetError
		oe *scripting.OutputError
	)
	switch {
	case err == nil:
		e.byte(errNone)
	case errors.As(err, &ce):
		e.byte(errCompile)
		e.string(string(ce.Language))
		e.string(ce.File)
		e.varint(int64(ce.Line))
		e.varint(int64(ce.Column))
		e.string(ce.Msg)
	case errors.As(err, &re):
		e.byte(errRuntime)
		e.string(string(re.Language))
		e.string(re.Msg)
		if e.value(re.Thrown) != nil {
			e.b[len(e.b)-1] = tagNil // not of the JSON shape: dropped, the message says it
		}
		e.stack(re.Stack)
	case errors.As(err, &be):
		e.byte(errBudget)
		e.string(string(be.Language))
		e.string(be.Budget)
		e.varint(be.Limit)
		e.varint(be.Used)
		e.string(be.Unit)
		e.stack(be.Stack)
	case errors.As(err, &oe):
		e.byte(errOutput)
		e.string(string(oe.Language))
		e.string(oe.Path)
		e.string(oe.Msg)
	default:
		e.byte(errOther)
		e.string(err.Error())
	}
}

// decoder reads what an encoder wrote; the first error sticks and every later read returns
// zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// length reads a count of items each at least min bytes long, refusing one the frame
// cannot hold.
func (d *decoder) length(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.length(1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) bool() bool              { return d.byte() == 1 }
func (d *decoder) duration() time.Duration { return time.Duration(d.varint()) }

func (d *decoder) value(depth int) any {
	if depth > maxDepth {
		d.fail(errors.New("isolated: value nested too deep"))
		return nil
	}
	switch tag := d.byte(); tag {
	case tagNil:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagInt:
		return d.varint()
	case tagFloat:
		if len(d.b) < 8 {
			d.fail(errShort)
			return nil
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return f
	case tagString:
		return d.string()
	case tagList:
		n := d.length(1)
		out := make([]any, n)
		for i := range out {
			out[i] = d.value(depth + 1)
		}
		return out
	case tagMap:
		n := d.length(2)
		out := make(map[string]any, n)
		for range n {
			k := d.string()
			out[k] = d.value(depth + 1)
		}
		return out
	default:
		d.fail(fmt.Errorf("isolated: unknown value tag %d", tag))
		return nil
	}
}

func (d *decoder) budget() scripting.Budget {
	return scripting.Budget{Timeout: d.duration(), MaxSteps: d.uvarint(), MaxStackDepth: int(d.varint()),
		MaxMemory: d.varint(), MaxOutputBytes: d.varint(), MaxOutputObjects: d.varint()}
}

func (d *decoder) stack() []scripting.Frame {
	n := d.length(4)
	if n == 0 {
		return nil
	}
	out := make([]scripting.Frame, n)
	for i := range out {
		out[i] = scripting.Frame{Function: d.string(), File: d.string(), Line: int(d.varint()), Column: int(d.varint())}
	}
	return out
}

func (d *decoder) error() error {
	switch kind := d.byte(); kind {
	case errNone:
		return nil
	case errCompile:
		return &scripting.CompileError{Language: scripting.Language(d.string()), File: d.string(),
			Line: int(d.varint()), Column: int(d.varint()), Msg: d.string()}
	case errRuntime:
		return &scripting.RuntimeError{Language: scripting.Language(d.string()), Msg: d.string(),
			Thrown: d.value(0), Stack: d.stack()}
	case errBudget:
		return &scripting.BudgetError{Language: scripting.Language(d.string()), Budget: d.string(),
			Limit: d.varint(), Used: d.varint(), Unit: d.string(), Stack: d.stack()}
	case errOutput:
		return &scripting.OutputError{Language: scripting.Language(d.string()), Path: d.string(), Msg: d.string()}
	case errOther:
		return errors.New(d.string())
	default:
		d.fail(fmt.Errorf("isolated: unknown error kind %d", kind))
		return nil
	}
}
