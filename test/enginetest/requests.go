package enginetest

import (
	"net/http"
	"strings"
	"sync"
)

// RequestCounter counts API requests by verb, and writes by resource. Safe for concurrent use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[string]int
	writes map[string]int // by resource (plural name, "/status" for the subresource)
}

func (c *RequestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		verb := r.Method
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
			verb = "WATCH"
		case r.Method == http.MethodGet && isList(r.URL.Path):
			verb = "LIST"
		}
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[verb]++
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if c.writes == nil {
				c.writes = map[string]int{}
			}
			c.writes[resourceOf(r.URL.Path)]++
		}
		c.mu.Unlock()
		return next.RoundTrip(r)
	})
}

// isList guesses a collection path: /api/v1/namespaces/ns/configmaps has an even number of
// segments after the group-version prefix. Only used to label counts.
func isList(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 0 && parts[0] == "api" {
		parts = parts[2:]
	} else if len(parts) > 2 {
		parts = parts[3:]
	}
	return len(parts)%2 == 1
}

// resourceOf is the resource a request path names: "configmaps", "bundles/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 0 && parts[0] == "api" {
		parts = parts[2:]
	} else if len(parts) > 2 {
		parts = parts[3:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return ""
	case 3:
		return parts[0] + "/" + parts[2]
	}
	return parts[0]
}

// Reset sets every count to zero.
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	c.counts = map[string]int{}
	c.writes = map[string]int{}
	c.mu.Unlock()
}

// WritesByResource returns a copy of the write counts by resource.
func (c *RequestCounter) WritesByResource() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.writes))
	for k, v := range c.writes {
		out[k] = v
	}
	return out
}

// Counts returns a copy of the counts by verb.
func (c *RequestCounter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Writes is the number of POST, PUT, PATCH and DELETE requests.
func (c *RequestCounter) Writes() int {
	n := 0
	for verb, v := range c.Counts() {
		switch verb {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			n += v
		}
	}
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
