package scripting

import (
	"container/list"
	"crypto/sha256"
	"sync"
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
	elem *list.Element // position in the LRU list; nil once evicted
}

// compileCache is a bounded LRU of compiles with single-flight first compiles: the first
// caller of a key inserts a pending entry and compiles outside the lock; later callers of
// the same key wait on that entry. An entry evicted while pending still completes for those
// already waiting on it.
//
// The bound applies to the cache's references only, never to programs in use: Compile hands
// each caller the Program itself, which a running controller keeps for its life, and
// eviction only drops the cache's reference (no program is closed or invalidated). So a
// controller whose program was evicted keeps running the program it compiled; what eviction
// costs is one compile more when the same source is compiled again (an edit, another
// controller with the same source). With more live distinct sources than the bound (5,000
// controllers), live programs are held by their controllers, not the cache, and the cache
// holds the most recently compiled ones.
type compileCache struct {
	size int // <0: no caching

	mu        sync.Mutex
	entries   map[cacheKey]*cacheEntry
	lru       list.List // front is most recently used; values are *cacheEntry
	hits      uint64
	misses    uint64
	evictions uint64
}

func newCompileCache(size int) *compileCache {
	if size == 0 {
		size = DefaultCacheSize
	}
	return &compileCache{size: size, entries: make(map[cacheKey]*cacheEntry)}
}

// get returns the finished entry for key, calling compile at most once per key while the
// key stays cached.
func (c *compileCache) get(key cacheKey, compile func() (Program, string, error)) *cacheEntry {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.hits++
		c.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		<-e.done
		return e
	}
	c.misses++
	e := &cacheEntry{key: key, done: make(chan struct{})}
	if c.size > 0 {
		e.elem = c.lru.PushFront(e)
		c.entries[key] = e
		for c.lru.Len() > c.size {
			old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
			old.elem = nil
			delete(c.entries, old.key)
			c.evictions++
		}
	}
	c.mu.Unlock()

	e.prog, e.name, e.err = compile()
	close(e.done)
	return e
}

func (c *compileCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Entries: len(c.entries)}
}
