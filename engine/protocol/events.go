package protocol

import (
	"regexp"
	"strconv"
)

// Event is one Event a hook asks the engine to record on its parent.
type Event struct {
	// Type is "Normal" or "Warning".
	Type string
	// Reason is UpperCamelCase, as Kubernetes' own reasons: what happened, in one word.
	Reason string
	// Message is for people: what happened and, for a Warning, what to do.
	Message string
}

// Bounds on a response's events. A response asking for more is invalid: a hook that emits
// an Event on every sync floods nobody's Event list, since the engine limits their rate too.
const (
	MaxEvents       = 10
	MaxReasonLen    = 128
	MaxEventMessage = 1024
)

var reasonPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// parseEvents reads resp's events: a list of {type, reason, message}, type Normal when
// absent.
func parseEvents(resp map[string]any) ([]Event, error) {
	v, ok := resp["events"]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, Invalid("events", "expected a list, got %s", TypeName(v))
	}
	if len(list) > MaxEvents {
		return nil, Invalid("events", "%d events; a response may ask for at most %d", len(list), MaxEvents)
	}
	out := make([]Event, 0, len(list))
	for i, item := range list {
		path := "events[" + strconv.Itoa(i) + "]"
		m, ok := item.(map[string]any)
		if !ok {
			return nil, Invalid(path, "expected an object, got %s", TypeName(item))
		}
		if err := CheckFields(m, "type", "reason", "message"); err != nil {
			e := err.(*InvalidResponseError)
			return nil, Invalid(path+"."+e.Path, "%s", e.Msg)
		}
		ev := Event{Type: "Normal"}
		for _, f := range []struct {
			name string
			to   *string
		}{{"type", &ev.Type}, {"reason", &ev.Reason}, {"message", &ev.Message}} {
			if x, ok := m[f.name]; ok && x != nil {
				s, ok := x.(string)
				if !ok {
					return nil, Invalid(path+"."+f.name, "expected a string, got %s", TypeName(x))
				}
				*f.to = s
			}
		}
		switch {
		case ev.Type != "Normal" && ev.Type != "Warning":
			return nil, Invalid(path+".type", "%q; expected Normal or Warning", ev.Type)
		case !reasonPattern.MatchString(ev.Reason) || len(ev.Reason) > MaxReasonLen:
			return nil, Invalid(path+".reason", "%q; expected UpperCamelCase letters and digits, at most %d", ev.Reason, MaxReasonLen)
		case ev.Message == "":
			return nil, Invalid(path+".message", "required")
		case len(ev.Message) > MaxEventMessage:
			return nil, Invalid(path+".message", "%d bytes; at most %d", len(ev.Message), MaxEventMessage)
		}
		out = append(out, ev)
	}
	return out, nil
}
