package wire

import "sync"

// The objects a controller caches come in families: a parent's children carry the labels
// its selector requires and the one ownerReference naming it, alike to the byte, and every
// object of a resource and namespace the same apiVersion, kind and namespace. As maps and
// boxed strings, those values are about 40% of a small child's memory in the cache, and most
// of its allocations. Decoding for the cache therefore looks each one up by its JSON text
// among those decoded recently and, when found, uses that value instead of building
// another.
//
// Sharing is sound only because nothing modifies what the cache holds (client-go's rule for
// informer caches, which the engine keeps: it copies before it changes, and hooks see
// copy-on-write views). The table is bounded: a family is decoded together (a list is in
// name order, a parent's children are written together), so recent is what matters.

// sharedMax bounds each generation of sharedSubtrees.
const sharedMax = 4096

// sharedSubtrees maps JSON text to the value decoded from it, in two generations: when the
// current one is full it becomes the old one, and a value found in the old one moves to the
// current one. Safe for concurrent use.
type sharedSubtrees struct {
	mu       sync.Mutex
	cur, old map[string]any
}

var subtrees = &sharedSubtrees{cur: map[string]any{}}

// get returns the value decoded from text, if it is held.
func (s *sharedSubtrees) get(text []byte) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.cur[string(text)]; ok {
		return v, true
	}
	v, ok := s.old[string(text)]
	if ok {
		s.putLocked(string(text), v)
	}
	return v, ok
}

// put holds v as the value decoded from text.
func (s *sharedSubtrees) put(text []byte, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(string(text), v)
}

func (s *sharedSubtrees) putLocked(text string, v any) {
	if len(s.cur) >= sharedMax {
		s.old, s.cur = s.cur, make(map[string]any, sharedMax)
	}
	s.cur[text] = v
}

// shared parses the value at p.pos as value does, or returns the value decoded earlier from
// the same text.
func (p *parser) shared() (any, error) {
	p.space()
	start := p.pos
	if err := p.skip(); err != nil {
		return nil, err
	}
	text := p.data[start:p.pos]
	if v, ok := subtrees.get(text); ok {
		return v, nil
	}
	p.pos = start
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	switch v.(type) {
	case map[string]any, []any, string: // the values that take memory of their own
		subtrees.put(text, v)
	}
	return v, nil
}
