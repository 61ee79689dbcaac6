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
