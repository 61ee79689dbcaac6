package hooks

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Defaults of a webhook's etag settings.
const (
	DefaultETagTimeout = 600 * time.Second
	DefaultETagCleanup = 60 * time.Second
	// maxETagEntries bounds one cache: when full, an arbitrary entry makes room.
	maxETagEntries = 4096
)

// ETagCache keeps the responses of one webhook by the hash of the request that produced
// them, with the ETag they came with. Safe for concurrent use.
type ETagCache struct {
	timeout, cleanup time.Duration
	now              func() time.Time

	mu        sync.Mutex
	entries   map[[sha256.Size]byte]etagEntry
	nextSweep time.Time
}

type etagEntry struct {
	etag    string
	body    []byte
	expires time.Time
}

// NewETagCache returns a cache whose entries may be reused for timeout after they were
// stored, and from which expired entries are dropped at most every cleanup (when the cache
// is next used: it runs no goroutine).
func NewETagCache(timeout, cleanup time.Duration) *ETagCache {
	return &ETagCache{timeout: timeout, cleanup: cleanup, now: time.Now, entries: map[[sha256.Size]byte]etagEntry{}}
}

// get returns the unexpired entry of key.
func (c *ETagCache) get(key [sha256.Size]byte) (etagEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.sweepIfDue(now)
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		return etagEntry{}, false
	}
	return e, true
}

// put keeps body, which came with etag, as the response to the request hashed to key.
func (c *ETagCache) put(key [sha256.Size]byte, etag string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.sweepIfDue(now)
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxETagEntries {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = etagEntry{etag: etag, body: body, expires: now.Add(c.timeout)}
}

// Len is the number of entries held, expired ones not yet swept included.
func (c *ETagCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *ETagCache) sweepIfDue(now time.Time) {
	if now.Before(c.nextSweep) {
		return
	}
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	c.nextSweep = now.Add(c.cleanup)
}
