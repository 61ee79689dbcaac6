package wire

import (
	"io"
	"strings"
	"testing"
)

// eventSource serves events one after another, each in as many reads as the reader's
// buffer takes, and records the size of the reader's buffer whenever it asks for the start
// of an event: what a watch holds while it waits.
type eventSource struct {
	events  []string
	pending string
	reader  *frameReader
	waiting []int
}

func (s *eventSource) Read(p []byte) (int, error) {
	if s.pending == "" {
		if len(s.events) == 0 {
			return 0, io.EOF
		}
		s.waiting = append(s.waiting, len(s.reader.buf))
		s.pending, s.events = s.events[0], s.events[1:]
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// A watch waiting for its next event holds its small buffer only, whatever the size of the
// events before; the frames it hands out are the events whole.
func TestFrameReaderWaitsWithItsIdleBuffer(t *testing.T) {
	events := []string{
		`{"type":"ADDED","object":{"data":"` + strings.Repeat("x", 100<<10) + `"}}`,   // grows past a pooled buffer
		`{"type":"MODIFIED","object":{"data":"` + strings.Repeat("y", 20<<10) + `"}}`, // fits a pooled one
		`{"type":"BOOKMARK","object":{}}`,                                             // fits the idle one
		`{"type":"DELETED","object":{"data":"z"}}`,
	}
	src := &eventSource{events: append([]string(nil), events...)}
	f := framer{}.NewFrameReader(io.NopCloser(src)).(*frameReader)
	src.reader = f
	for i, want := range events {
		var got []byte
		buf := make([]byte, 4<<10)
		for {
			n, err := f.Read(buf)
			got = append(got, buf[:n]...)
			if err == nil {
				break
			}
			if err != io.ErrShortBuffer {
				t.Fatalf("event %d: %v", i, err)
			}
		}
		if string(got) != want {
			t.Fatalf("event %d: got %d bytes %.40q..., want %d bytes", i, len(got), got, len(want))
		}
	}
	if _, err := f.Read(make([]byte, 10)); err != io.EOF {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
	for i, size := range src.waiting {
		if size != idleReadSize {
			t.Errorf("waiting for event %d with a buffer of %d bytes, want %d", i, size, idleReadSize)
		}
	}
	if f.large != nil {
		t.Error("a drained reader keeps a pooled buffer")
	}
}
