package scale

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// auditLog reads the API server's audit log forward, one stretch per phase.
type auditLog struct {
	f   *os.File
	off int64
	// watches holds the IDs of long-running requests counted at ResponseStarted, so that
	// their ResponseComplete, which comes when they end, is not counted again.
	watches map[string]bool
}

// auditEvent is the part of an audit.k8s.io/v1 Event the counts need.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// requestKind is a verb on a resource: "create configmaps", "patch fanouts/status". The verb
// is the audit log's, except that a server-side apply (a forced patch) is "apply"; requests
// for no resource (discovery) have the resource "-".
type requestKind struct{ verb, resource string }

// requests counts requests by user and kind.
type requests map[string]map[requestKind]int

func openAuditLog(path string) (*auditLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &auditLog{f: f, watches: map[string]bool{}}, nil
}

func (a *auditLog) Close() error { return a.f.Close() }

// size is the log's current length: a phase boundary to read up to later.
func (a *auditLog) size() (int64, error) {
	st, err := a.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// readTo counts the requests logged from where the last read stopped up to end, a size taken
// earlier; a line still being written at end is left for the next read.
func (a *auditLog) readTo(end int64) (requests, error) {
	out := requests{}
	r := bufio.NewReaderSize(io.NewSectionReader(a.f, a.off, end-a.off), 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// An event longer than the buffer: not one this policy writes, but read it whole.
			// The slice is the reader's buffer, which the next read overwrites: copy it first.
			line = append([]byte(nil), line...)
			var rest []byte
			rest, err = r.ReadBytes('\n')
			line = append(line, rest...)
		}
		if err == io.EOF {
			return out, nil // a partial line: not advanced past
		}
		if err != nil {
			return out, err
		}
		a.off += int64(len(line))
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return out, fmt.Errorf("audit log at %d: %w", a.off, err)
		}
		a.count(out, &ev)
	}
}

// count adds ev to out once per request: at ResponseStarted for a long-running request,
// else at ResponseComplete.
func (a *auditLog) count(out requests, ev *auditEvent) {
	switch ev.Stage {
	case "ResponseStarted":
		a.watches[ev.AuditID] = true
	case "ResponseComplete":
		if a.watches[ev.AuditID] {
			delete(a.watches, ev.AuditID)
			return
		}
	default:
		return
	}
	k := requestKind{verb: ev.Verb, resource: "-"}
	if ev.ObjectRef != nil && ev.ObjectRef.Resource != "" {
		k.resource = ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			k.resource += "/" + ev.ObjectRef.Subresource
		}
	}
	if k.verb == "patch" && strings.Contains(ev.RequestURI, "force=true") {
		k.verb = "apply"
	}
	user := ev.User.Username
	if out[user] == nil {
		out[user] = map[requestKind]int{}
	}
	out[user][k]++
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "apply", "delete", "deletecollection":
		return true
	}
	return false
}

// requestTotals sums one user's requests: all, writes, and writes to resources for which
// include is true.
func requestTotals(kinds map[requestKind]int, include func(resource string) bool) (total, writes, included int) {
	for k, n := range kinds {
		total += n
		if isWrite(k.verb) {
			writes += n
			if include(k.resource) {
				included += n
			}
		}
	}
	return total, writes, included
}

// formatKinds lists counts as "verb resource N", sorted, one per line with prefix.
func formatKinds(kinds map[requestKind]int, prefix string) string {
	if len(kinds) == 0 {
		return prefix + "(none)"
	}
	var lines []string
	for k, n := range kinds {
		lines = append(lines, fmt.Sprintf("%s%-7s %-30s %8d", prefix, k.verb, k.resource, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// formatOthers sums the requests of every user but the ones named, by user, on one line.
func formatOthers(r requests, except ...string) string {
	var parts []string
	for user, kinds := range r {
		skip := false
		for _, e := range except {
			skip = skip || user == e
		}
		if skip {
			continue
		}
		total, writes, _ := requestTotals(kinds, func(string) bool { return true })
		parts = append(parts, fmt.Sprintf("%s %d (%d writes)", user, total, writes))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
