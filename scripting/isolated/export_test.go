package isolated

// PIDs lists the pool's worker processes, for tests that check they are gone.
func PIDs(p *Pool) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for w := range p.all {
		out = append(out, w.pid)
	}
	return out
}

// Free is the number of workers waiting for a call.
func Free(p *Pool) int { return len(p.free) }

// IsResult reports whether b, one write of a worker's frame, is a call's result.
func IsResult(b []byte) bool { return len(b) > 4 && b[4] == msgResult }
