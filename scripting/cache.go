package scripting

import (
	"container/list"
	"crypto/sha256"
	"runtime"
	"sync"
	"weak"
)

// cacheKey identifies one compiled source.
type cacheKey struct {
	lang    Language
	version string
	sum     [sha256.Size]byte
}

func newCacheKey(lang Language, version, source string) cacheKey {
	return cacheKey{lang: lang, version: version, sum: sha256.Sum256([]byte(source))}
}

// cacheEntry is one compile, finished once done is closed. prog, name and err are written
// before done is closed and never after.
type cacheEntry struct {
	key  cacheKey
	done chan struct{}
	prog Program
	name string // the name the source was compiled under
	err  error
	lib  *libraryBuild // for the entry of a library's modules (linker.go)
	elem *list.Element // position in the LRU list; nil once evicted
}

// compileCache is a bounded LRU of compiles with single-flight first compiles: the first
// caller of a key inserts a pending entry and compiles outside the lock; later callers of
// the same key wait on that entry. An entry evicted while pending still completes for those
// already waiting on it.
//
// The bound applies to the programs no one uses, never to programs in use. Every Program a
// Runtime hands out holds its entry; eviction only drops the cache's strong reference and
// keeps a weak one (evicted), so an evicted program that a running controller still holds is
// found again by the next Compile of its source, and revived into the LRU, instead of being
// compiled into a second copy. An entry is gone once no Program holds it and the garbage
// collector has run. So with more live distinct sources than the bound (5,000 controllers)
// each live program stays compiled once, shared by every controller with its source.
type compileCache struct {
	size int // <0: no caching

	mu        sync.Mutex
	entries   map[cacheKey]*cacheEntry
	evicted   map[cacheKey]weak.Pointer[cacheEntry] // entries evicted that may still be in use
	lru       list.List                             // front is most recently used; values are *cacheEntry
	hits      uint64
	misses    uint64
	evictions uint64
}

func newCompileCache(size int) *compileCache {
	if size == 0 {
		size = DefaultCacheSize
	}
	return &compileCache{size: size, entries: make(map[cacheKey]*cacheEntry), evicted: make(map[cacheKey]weak.Pointer[cacheEntry])}
}

// get returns the finished entry for key, calling compile at most once per key while the
// key stays cached.
func (c *compileCache) get(key cacheKey, compile func() (Program, string, error)) *cacheEntry {
	return c.getEntry(key, func(e *cacheEntry) { e.prog, e.name, e.err = compile() })
}

// getEntry is get for entries that hold more than a Program: fill sets the entry's fields.
func (c *compileCache) getEntry(key cacheKey, fill func(*cacheEntry)) *cacheEntry {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.hits++
		c.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		<-e.done
		return e
	}
	if e := c.evicted[key].Value(); e != nil {
		// Evicted, but a Program of it is still in use: the same compiled code serves.
		c.hits++
		delete(c.evicted, key)
		c.insert(e)
		c.mu.Unlock()
		<-e.done
		return e
	}
	c.misses++
	e := &cacheEntry{key: key, done: make(chan struct{})}
	if c.size > 0 {
		c.insert(e)
		// Forget the weak reference once the entry is collected, unless it was revived or
		// replaced meanwhile.
		runtime.AddCleanup(e, c.forget, key)
	}
	c.mu.Unlock()

	fill(e)
	close(e.done)
	return e
}

// insert puts e at the front of the LRU and evicts what exceeds the bound to evicted. Call with
// c.mu held.
func (c *compileCache) insert(e *cacheEntry) {
	e.elem = c.lru.PushFront(e)
	c.entries[e.key] = e
	for c.lru.Len() > c.size {
		old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		old.elem = nil
		delete(c.entries, old.key)
		c.evicted[old.key] = weak.Make(old)
		c.evictions++
	}
}

// forget drops the weak reference of key once its entry was collected.
func (c *compileCache) forget(key cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.evicted[key]; ok && wp.Value() == nil {
		delete(c.evicted, key)
	}
}

func (c *compileCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Entries: len(c.entries)}
}
