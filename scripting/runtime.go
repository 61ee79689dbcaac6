package scripting

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrUnknownLanguage is returned (wrapped) by Runtime.Compile for a language no Compiler
// was registered for.
var ErrUnknownLanguage = errors.New("no compiler for language")

// DefaultCacheSize is the number of compiled sources a Runtime keeps when Options.CacheSize
// is zero.
const DefaultCacheSize = 1024

// Options configure a Runtime.
type Options struct {
	// CacheSize bounds the compile cache (entries, least recently used evicted first).
	// Zero means DefaultCacheSize; negative disables caching (every Compile compiles).
	CacheSize int
	// Defaults fill the zero fields of an invocation's Budget. Zero fields of Defaults take
	// DefaultBudget.
	Defaults Budget
	// Ceilings cap every field of an invocation's Budget, whatever the caller asked for.
	// Zero fields of Ceilings take DefaultCeilings.
	Ceilings Budget
	// Now is the clock handed to hooks (stdlib time). Nil means time.Now.
	Now func() time.Time
}

// Runtime compiles hook source through its Compilers and caches the result. It is safe for
// concurrent use; one Runtime is meant to be shared by the whole process.
type Runtime struct {
	compilers map[Language]Compiler
	defaults  Budget // already filled and capped
	ceilings  Budget
	now       func() time.Time
	cache     *compileCache
	// modulesCompiled counts library modules compiled (linker.go).
	modulesCompiled atomic.Uint64
}

// NewRuntime returns a Runtime using compilers, one per Language (a later one replaces an
// earlier one of the same Language).
func NewRuntime(opts Options, compilers ...Compiler) *Runtime {
	r := &Runtime{
		compilers: make(map[Language]Compiler, len(compilers)),
		now:       opts.Now,
		cache:     newCompileCache(opts.CacheSize),
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.ceilings = opts.Ceilings.WithDefaults(DefaultCeilings)
	r.defaults = opts.Defaults.WithDefaults(DefaultBudget).Capped(r.ceilings)
	for _, c := range compilers {
		r.compilers[c.Language()] = c
	}
	return r
}

// EffectiveBudget is the budget an invocation asking for b runs under: zero fields take the
// Runtime's defaults and every field is capped by its ceilings.
func (r *Runtime) EffectiveBudget(b Budget) Budget {
	return b.WithDefaults(r.defaults).Capped(r.ceilings)
}

// Ceilings is the most any invocation may use, whatever it asks for.
func (r *Runtime) Ceilings() Budget { return r.ceilings }

// Compile returns the Program for source in lang, compiling it only if no Program for the
// same (language, compiler version, sha256(source)) is cached. Concurrent first calls for one
// source compile it once and share the result. Compile errors are cached as well; a cached
// *CompileError is returned as a copy carrying this call's name.
//
// The returned Program applies EffectiveBudget to every Invocation and reports positions and
// stack frames of its source under name, even when the compiled code was first compiled under
// another name.
func (r *Runtime) Compile(lang Language, name, source string) (Program, error) {
	c, ok := r.compilers[lang]
	if !ok {
		return nil, fmt.Errorf("scripting: %w %q", ErrUnknownLanguage, lang)
	}
	key := newCacheKey(lang, c.Version(), source)
	e := r.cache.get(key, func() (Program, string, error) {
		p, err := recovered(lang, name, func() (Program, error) { return c.Compile(name, source) })
		return p, name, err
	})
	return r.finish(e, name)
}

// CacheStats counts compile cache activity since the Runtime was made.
type CacheStats struct {
	// Hits are Compile calls served from the cache, including those that waited for a
	// concurrent first compile of the same source.
	Hits uint64
	// Misses are Compile calls that compiled.
	Misses uint64
	// Evictions are entries dropped to stay within the size bound.
	Evictions uint64
	// Entries is the number of cached entries now.
	Entries int
}

// Stats returns the compile cache counters; safe to call at any time.
func (r *Runtime) Stats() CacheStats { return r.cache.stats() }

// budgetedProgram is what Runtime.Compile hands out: the shared compiled Program plus the
// caller's name and the Runtime's budget policy.
type budgetedProgram struct {
	Program
	rt           *Runtime
	name         string // the name the caller compiled under
	compiledName string // the name the shared Program was compiled under
	// entry keeps the cache entry alive while the Program is in use: the cache then finds it
	// again after an eviction (compileCache).
	entry *cacheEntry
}

func (p *budgetedProgram) Call(ctx context.Context, inv Invocation) (any, error) {
	inv.Budget = p.rt.EffectiveBudget(inv.Budget)
	if inv.Now == nil {
		inv.Now = p.rt.now
	}
	v, err := p.Program.Call(ctx, inv)
	if err != nil && p.name != p.compiledName {
		err = renameFrames(err, p.compiledName, p.name)
	}
	return v, err
}

// renameFrames returns err with stack frames located in file from renamed to. The error is
// copied, never modified: the original may be shared.
func renameFrames(err error, from, to string) error {
	rename := func(stack []Frame) []Frame {
		out := make([]Frame, len(stack))
		for i, f := range stack {
			if f.File == from {
				f.File = to
			}
			out[i] = f
		}
		return out
	}
	switch e := err.(type) {
	case *RuntimeError:
		cp := *e
		cp.Stack = rename(e.Stack)
		return &cp
	case *BudgetError:
		cp := *e
		cp.Stack = rename(e.Stack)
		return &cp
	}
	return err
}
