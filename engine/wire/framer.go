package wire

import (
	"errors"
	"io"
	"sync"
)

// framer splits a JSON watch stream into its events: top-level objects, found by counting
// brackets outside strings, one byte loop per byte received. apimachinery's JSON framer
// scans each event with encoding/json's state machine and copies it once more.
type framer struct{}

func (framer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &frameReader{r: r} }

// NewFrameWriter is unused by clients; watch streams are only read.
func (framer) NewFrameWriter(w io.Writer) io.Writer { return w }

// frameReader hands out one frame per Read, as apimachinery's streaming decoder expects: a
// frame larger than the caller's buffer comes in pieces, each but the last with
// io.ErrShortBuffer.
type frameReader struct {
	r          io.ReadCloser
	buf        []byte // buf[start:end] is received and not handed out
	start, end int
	// The scan of the frame being assembled, from buf[start]: how far, how deep, in a string,
	// after a backslash in one.
	scanned  int
	depth    int
	inString bool
	escaped  bool
	// rest of a frame too large for the last Read's buffer
	rest []byte
	err  error
	// idle is what the reader waits for the stream with while nothing is pending; large, the
	// framePool buffer buf is while a frame is assembled in one.
	idle  [idleReadSize]byte
	large *[]byte
}

// A reader assembles frames in a buffer of at least frameReadSize, taken from framePool, and
// gives it back once what it holds is handed out: a watch waiting for its next event holds
// idleReadSize bytes only. The engine runs a watch per resource, and per resource and tenant
// namespace: most of them idle most of the time.
const (
	frameReadSize = 32 << 10
	idleReadSize  = 1 << 10
)

var framePool = sync.Pool{New: func() any {
	b := make([]byte, frameReadSize)
	return &b
}}

func (f *frameReader) Read(data []byte) (int, error) {
	if len(f.rest) > 0 {
		return f.hand(data, f.rest)
	}
	frame, err := f.next()
	if err != nil {
		return 0, err
	}
	return f.hand(data, frame)
}

// hand copies frame into data, keeping what does not fit for the next Read.
func (f *frameReader) hand(data, frame []byte) (int, error) {
	n := copy(data, frame)
	if n < len(frame) {
		f.rest = append(f.rest[:0], frame[n:]...)
		return n, io.ErrShortBuffer
	}
	f.rest = f.rest[:0]
	return n, nil
}

// next returns the next complete top-level value; it aliases f.buf until the next call.
func (f *frameReader) next() ([]byte, error) {
	for {
		if frame, ok, err := f.scan(); err != nil {
			return nil, err
		} else if ok {
			return frame, nil
		}
		if f.err != nil {
			if f.err == io.EOF && f.start < f.end && f.scanned > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		f.fill()
	}
}

// scan continues the scan of buf[start:end]; ok when a whole value is there.
func (f *frameReader) scan() (frame []byte, ok bool, err error) {
	buf := f.buf[:f.end]
	i := f.start + f.scanned
	if f.scanned == 0 { // skip white space between frames
		for i < len(buf) && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') {
			i++
		}
		f.start = i
		if i == len(buf) {
			return nil, false, nil
		}
		if buf[i] != '{' && buf[i] != '[' {
			return nil, false, errors.New("wire: a watch stream frame is not a JSON object")
		}
	}
	for ; i < len(buf); i++ {
		c := buf[i]
		if f.inString {
			switch {
			case f.escaped:
				f.escaped = false
			case c == '\\':
				f.escaped = true
			case c == '"':
				f.inString = false
			}
			continue
		}
		switch c {
		case '"':
			f.inString = true
		case '{', '[':
			f.depth++
		case '}', ']':
			if f.depth--; f.depth == 0 {
				frame = buf[f.start : i+1]
				f.start, f.scanned = i+1, 0
				return frame, true, nil
			}
		}
	}
	f.scanned = i - f.start
	return nil, false, nil
}

// fill reads more of the stream, first moving the unread part to the buffer's front: into
// the idle buffer when nothing is pending, else into a buffer with room for half a
// frameReadSize at least.
func (f *frameReader) fill() {
	if f.start > 0 {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	switch {
	case f.end == 0:
		f.release()
		f.buf = f.idle[:]
	case len(f.buf)-f.end < frameReadSize/2:
		f.grow()
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.end += n
	if err != nil {
		f.err = err
	}
}

// grow moves what is pending into a larger buffer: a pooled one from the idle buffer, one
// twice as large from a pooled one or larger.
func (f *frameReader) grow() {
	var grown []byte
	var pooled *[]byte
	if len(f.buf) < frameReadSize {
		pooled = framePool.Get().(*[]byte)
		grown = *pooled
	} else {
		grown = make([]byte, 2*len(f.buf))
	}
	copy(grown, f.buf[:f.end])
	f.release()
	f.buf, f.large = grown, pooled
}

// release gives the pooled buffer back, if buf is one; the caller replaces buf.
func (f *frameReader) release() {
	if f.large != nil {
		framePool.Put(f.large)
		f.large = nil
	}
}

// Close closes the stream. A pooled buffer is left to the garbage collector: a Read may be
// under way.
func (f *frameReader) Close() error { return f.r.Close() }
