package wire

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envelope reads a watch event's type, and where its object's bytes are, without decoding
// the object: the watch decoder decodes those next, once. ev.Object.Raw aliases data, which
// the caller owns and reuses for the next event after it has decoded this one.
func envelope(data []byte, ev *metav1.WatchEvent) error {
	p := parser{data: data}
	p.space()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return p.fail("want a watch event object")
	}
	p.pos++
	ev.Type, ev.Object.Raw = "", nil
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return p.end()
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail("want a key")
		}
		k, err := p.key()
		if err != nil {
			return err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail("want ':'")
		}
		p.pos++
		p.space()
		start := p.pos
		switch k {
		case "type":
			v, err := p.value()
			if err != nil {
				return err
			}
			ev.Type, _ = v.(string)
		default:
			if err := p.skip(); err != nil {
				return err
			}
			if k == "object" {
				ev.Object.Raw = p.data[start:p.pos]
			}
		}
		p.space()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return p.end()
		default:
			return p.fail("want ',' or '}'")
		}
	}
}

// skip moves past one value, checking only its structure: brackets that match, strings that
// end. Whatever decodes the value later checks the rest.
func (p *parser) skip() error {
	depth := 0
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; c {
		case '"':
			if err := p.skipString(); err != nil {
				return err
			}
			if depth == 0 {
				return nil
			}
			continue
		case '{', '[':
			if depth++; depth > maxDepth {
				return errDepth
			}
		case '}', ']':
			if depth--; depth < 0 {
				return p.fail("unexpected " + string(c))
			}
			if depth == 0 {
				p.pos++
				return nil
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return p.fail("want a value")
			}
		default:
			if depth == 0 { // a number or a literal
				start := p.pos
				for p.pos < len(p.data) && !delimiter(p.data[p.pos]) {
					p.pos++
				}
				if p.pos == start {
					return p.fail("want a value")
				}
				return nil
			}
		}
		p.pos++
	}
	return p.fail("unexpected end")
}

func delimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// skipString moves past a string starting at p.pos.
func (p *parser) skipString() error {
	for i := p.pos + 1; i < len(p.data); i++ {
		switch p.data[i] {
		case '\\':
			i++
		case '"':
			p.pos = i + 1
			return nil
		}
	}
	return p.fail("unterminated string")
}
