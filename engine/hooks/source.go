package hooks

import (
	"fmt"
)

// SourceMeter bounds the source that one controller's inline hooks compile, together, so that
// a tenant cannot make the engine hold megabytes of compiled code per controller: each
// distinct source (a hook's own, the controller's shared script) counts once, by its name.
// A meter serves one build of one controller, on one goroutine; a nil meter bounds nothing.
type SourceMeter struct {
	// Max is the bound in bytes; 0 or less bounds nothing.
	Max  int64
	used int64
	seen map[string]bool
}

// SourceTooLargeError is a controller whose sources, together, pass SourceMeter.Max.
type SourceTooLargeError struct {
	// Name is the source that passed the bound (compositecontroller/NAME/hooks/sync, .../script).
	Name            string
	Size, Used, Max int64
}

func (e *SourceTooLargeError) Error() string {
	return fmt.Sprintf("source %s is %s, bringing the controller's sources to %s, more than the engine compiles for one controller (%s, --max-source-bytes)",
		e.Name, quantity(e.Size), quantity(e.Used), quantity(e.Max))
}

// charge counts source name of size bytes, once per name; a *SourceTooLargeError once the
// sum passes Max.
func (m *SourceMeter) charge(name string, size int) error {
	if m == nil || m.Max <= 0 || m.seen[name] {
		return nil
	}
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	m.seen[name] = true
	m.used += int64(size)
	if m.used > m.Max {
		return &SourceTooLargeError{Name: name, Size: int64(size), Used: m.used, Max: m.Max}
	}
	return nil
}
