package scripting

import (
	"runtime/metrics"
	"sync"
	"time"
)

// WatchdogInterval is how often the allocation watchdog samples the heap while at least one
// invocation is watched.
const WatchdogInterval = time.Millisecond

// WatchdogNearInterval is how often it samples while some invocation has been charged at
// least half its limit. A single large allocation (the last step of a doubling loop) is
// counted when it is made and followed by a copy whose length grows with its size; sampling
// fast near the limit catches the charge during that copy, so the interpreter stops at its
// next instruction instead of making one more, twice as large.
const WatchdogNearInterval = 100 * time.Microsecond

// WatchMemory starts charging allocations to one invocation and calls cancel (once, from
// the watchdog goroutine, with the bytes charged so far) when the charge passes limit. The
// returned stop ends the watch and returns the bytes charged; call it exactly once, when the
// invocation returns. A limit <= 0 disables cancellation but still measures.
//
// Go does not count allocations per goroutine, so the watchdog samples the process-wide
// cumulative counter /gc/heap/allocs:bytes (runtime/metrics) from one shared goroutine that
// runs only while some invocation is watched, every WatchdogInterval, and every
// WatchdogNearInterval while some invocation has been charged half its limit or more.
//
// Attribution is conservative: an invocation is charged everything the process allocated
// between its WatchMemory and the sample being checked, including what concurrent
// invocations and the engine allocated meanwhile. Hence:
//
//   - Guaranteed: an invocation is cancelled no later than one sampling interval after the
//     process as a whole allocated limit bytes since it started, so it alone can never
//     allocate more than limit plus what the process allocates in one interval, whatever
//     runs beside it. Cancellation takes effect at the interpreter's next cancellation check
//     (the next Starlark step, the next goja interrupt check), not inside a Go builtin that
//     is already allocating; the pre-allocation size checks in the adapters cover those.
//   - Not guaranteed: precision under concurrency. Allocations of other goroutines are
//     charged too, so with a busy process an invocation can be cancelled having allocated
//     less than its limit itself (a false positive, never a false negative). Limits should
//     therefore be generous; the exact per-operation checks are the pre-allocation checks
//     and the output caps.
//   - Not measured: live heap. Allocation is counted whether or not it is freed, so a loop
//     that allocates and drops garbage is charged for every byte, which bounds GC work an
//     invocation can cause as well as its footprint.
func WatchMemory(limit int64, cancel func(used int64)) (stop func() (used int64)) {
	return StartMemoryWatch(limit, cancel).Stop
}

// SmallAlloc is the size below which MemoryWatch.Reserve admits an allocation without
// sampling the heap: smaller allocations are left to the watchdog.
const SmallAlloc = 64 << 10

// MemoryWatch is one watched invocation (see WatchMemory), a handle that may be copied. Its
// methods are safe to call from the invocation's goroutine while the watchdog runs.
type MemoryWatch struct{ w *memWatch }

// StartMemoryWatch is WatchMemory returning the watch itself, for callers that also check
// allocations before they happen (Reserve). CallWatch starts one for each invocation.
func StartMemoryWatch(limit int64, cancel func(used int64)) *MemoryWatch {
	w := &memWatch{limit: limit, exceeded: cancelFunc(cancel)}
	w.start()
	return &MemoryWatch{w}
}

// Stop ends the watch and returns the bytes charged. Call it exactly once.
func (m MemoryWatch) Stop() int64 {
	watchdog.remove(m.w)
	return heapAllocs() - m.w.base
}

// Used samples the heap now and returns the bytes charged so far.
func (m MemoryWatch) Used() int64 { return heapAllocs() - m.w.base }

// Limit is the limit the watch was started with.
func (m MemoryWatch) Limit() int64 { return m.w.limit }

// Reserve is the pre-allocation check of amplifying built-ins: it returns a *BudgetError for
// BudgetMemory if allocating n more bytes would take the invocation past its limit, counting
// what it has been charged so far. Allocations under SmallAlloc are admitted without a heap
// sample unless n alone passes the limit.
func (m MemoryWatch) Reserve(lang Language, n int64) error {
	limit := m.w.limit
	if limit <= 0 {
		return nil
	}
	if n < SmallAlloc && n <= limit {
		return nil
	}
	used := int64(0)
	if n <= limit {
		used = m.Used()
	}
	if n > limit || used+n > limit {
		return &BudgetError{Language: lang, Budget: BudgetMemory, Limit: limit, Used: used + n, Unit: "bytes"}
	}
	return nil
}

type memWatch struct {
	limit int64
	base  int64
	// exceeded is told the bytes charged, once, when they pass limit. An interface rather
	// than a func, so that a CallWatch, which embeds its memWatch, is told without a closure.
	exceeded interface{ memoryExceeded(used int64) }
	fired    bool // guarded by watchdog.mu
}

// start takes the heap's count as the base and adds w to the watchdog.
func (w *memWatch) start() {
	w.base = heapAllocs()
	watchdog.add(w)
}

// cancelFunc is WatchMemory's cancel as a memWatch's exceeded.
type cancelFunc func(used int64)

func (f cancelFunc) memoryExceeded(used int64) { f(used) }

// memWatchdog is the single sampler goroutine and the set of active watches.
type memWatchdog struct {
	mu      sync.Mutex
	active  map[*memWatch]struct{}
	running bool
}

var watchdog = memWatchdog{active: make(map[*memWatch]struct{})}

func (d *memWatchdog) add(w *memWatch) {
	d.mu.Lock()
	d.active[w] = struct{}{}
	if !d.running {
		d.running = true
		go d.run()
	}
	d.mu.Unlock()
}

func (d *memWatchdog) remove(w *memWatch) {
	d.mu.Lock()
	delete(d.active, w)
	d.mu.Unlock()
}

// run samples until no watch is left; add restarts it.
func (d *memWatchdog) run() {
	interval := WatchdogInterval
	t := time.NewTimer(interval)
	defer t.Stop()
	var fire []*memWatch
	for range t.C {
		now := heapAllocs()
		d.mu.Lock()
		if len(d.active) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		interval = WatchdogInterval
		for w := range d.active {
			if w.fired || w.limit <= 0 {
				continue
			}
			used := now - w.base
			if used > w.limit {
				w.fired = true
				fire = append(fire, w)
			} else if used >= w.limit/2 {
				interval = WatchdogNearInterval
			}
		}
		t.Reset(interval)
		d.mu.Unlock()
		for i, w := range fire {
			w.exceeded.memoryExceeded(now - w.base)
			fire[i] = nil
		}
		fire = fire[:0]
	}
}

var allocsSample = sync.Pool{New: func() any {
	return &[1]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
}}

// heapAllocs is the cumulative count of bytes the process has allocated on the heap.
func heapAllocs() int64 {
	s := allocsSample.Get().(*[1]metrics.Sample)
	metrics.Read(s[:])
	v := int64(s[0].Value.Uint64())
	allocsSample.Put(s)
	return v
}
