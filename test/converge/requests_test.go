package converge

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// requestCounter counts the API requests that pass through a rest.Config's transport, by
// verb and resource. Safe for concurrent use.
type requestCounter struct {
	mu     sync.Mutex
	counts map[requestKind]int
}

// requestKind is a verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE) on a resource such as
// "configmaps" or "fanouts/status"; discovery requests have the resource "discovery".
type requestKind struct{ verb, resource string }

func (c *requestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		k := classify(r)
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[requestKind]int{}
		}
		c.counts[k]++
		c.mu.Unlock()
		return next.RoundTrip(r)
	})
}

// classify names a request's verb and resource from its method and path:
// /api/v1/namespaces/ns/configmaps/name/status is a write to "configmaps/status".
func classify(r *http.Request) requestKind {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		segs = nil
	}
	if len(segs) > 2 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	if len(segs) == 0 {
		return requestKind{verb: r.Method, resource: "discovery"}
	}
	k := requestKind{verb: r.Method, resource: segs[0]}
	if len(segs) > 2 {
		k.resource += "/" + segs[2]
	}
	if r.Method == http.MethodGet && len(segs) == 1 {
		k.verb = "LIST"
		if r.URL.Query().Get("watch") == "true" {
			k.verb = "WATCH"
		}
	}
	return k
}

func (c *requestCounter) reset() {
	c.mu.Lock()
	c.counts = map[requestKind]int{}
	c.mu.Unlock()
}

// snapshot returns a copy of the counts.
func (c *requestCounter) snapshot() map[requestKind]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[requestKind]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func isWrite(verb string) bool {
	switch verb {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// summary sums counts by verb, and the writes to the resources for which include is true.
func summary(counts map[requestKind]int, include func(resource string) bool) (total int, byVerb map[string]int, writes int) {
	byVerb = map[string]int{}
	for k, n := range counts {
		total += n
		byVerb[k.verb] += n
		if isWrite(k.verb) && include(k.resource) {
			writes += n
		}
	}
	return total, byVerb, writes
}

// format lists counts as "VERB resource N", sorted, one per line with prefix.
func format(counts map[requestKind]int, prefix string) string {
	var lines []string
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%s%-6s %-28s %d", prefix, k.verb, k.resource, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func formatVerbs(byVerb map[string]int) string {
	var parts []string
	for v, n := range byVerb {
		parts = append(parts, fmt.Sprintf("%s %d", v, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
