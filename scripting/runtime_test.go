package scripting

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeCompiler compiles any source; sources starting with "!" fail with a CompileError.
// It counts compiles and can be held to make concurrent first calls overlap.
type fakeCompiler struct {
	compiles atomic.Int64
	hold     chan struct{} // when non-nil, Compile waits for it to close
}

func (c *fakeCompiler) Language() Language { return Starlark }
func (c *fakeCompiler) Version() string    { return "fake-1" }
func (c *fakeCompiler) Compile(name, source string) (Program, error) {
	c.compiles.Add(1)
	if c.hold != nil {
		<-c.hold
	}
	if strings.HasPrefix(source, "!") {
		return nil, &CompileError{Language: Starlark, File: name, Line: 1, Column: 2, Msg: "bad source"}
	}
	if source == "panic" {
		panic("boom")
	}
	return &fakeProgram{name: name}, nil
}

// fakeProgram returns the invocation it received, so tests can see the effective budget.
type fakeProgram struct{ name string }

func (p *fakeProgram) Language() Language  { return Starlark }
func (p *fakeProgram) Functions() []string { return []string{"sync"} }
func (p *fakeProgram) Call(ctx context.Context, inv Invocation) (any, error) {
	if inv.Function == "fail" {
		return nil, &RuntimeError{Language: Starlark, Msg: "failed", Stack: []Frame{{Function: "sync", File: p.name, Line: 3}}}
	}
	return inv, nil
}

func TestCompileCachesAndEvictsLeastRecentlyUsed(t *testing.T) {
	c := &fakeCompiler{}
	r := NewRuntime(Options{CacheSize: 2}, c)
	steps := []struct {
		source       string
		wantCompiles int64
	}{
		{"a", 1}, {"a", 1}, {"b", 2}, {"a", 2}, // a is now most recent
		{"c", 3}, // evicts b
		{"a", 3}, {"c", 3},
		{"b", 4}, // recompiled after eviction; evicts a
		{"a", 5},
	}
	for i, s := range steps {
		// The Programs of earlier steps are dropped: collected, their evicted entries are gone
		// (TestCompileCacheKeepsProgramsInUse is the other case).
		runtime.GC()
		if _, err := r.Compile(Starlark, "n", s.source); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := c.compiles.Load(); got != s.wantCompiles {
			t.Fatalf("step %d (%q): %d compiles, want %d", i, s.source, got, s.wantCompiles)
		}
	}
	st := r.Stats()
	if st.Hits != 4 || st.Misses != 5 || st.Evictions != 3 || st.Entries != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestCompileCacheKeepsProgramsInUse: the cache's bound never costs a program in use a second
// compile. An evicted program some caller still holds is found again and shared; once no one
// holds it and the garbage collector has run, its source compiles anew.
func TestCompileCacheKeepsProgramsInUse(t *testing.T) {
	c := &fakeCompiler{}
	r := NewRuntime(Options{CacheSize: 1}, c)
	held, err := r.Compile(Starlark, "held", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Compile(Starlark, "n", "b"); err != nil { // evicts a
		t.Fatal(err)
	}
	runtime.GC()
	again, err := r.Compile(Starlark, "again", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.compiles.Load(); got != 2 {
		t.Fatalf("%d compiles, want 2: a program in use was compiled again after its eviction", got)
	}
	if held.(*budgetedProgram).Program != again.(*budgetedProgram).Program {
		t.Fatal("the revived entry is not the program in use")
	}
	runtime.KeepAlive(held)
	held, again = nil, nil
	// b, evicted by a's revival and held by no one, is gone after this.
	runtime.GC()
	if _, err := r.Compile(Starlark, "n", "b"); err != nil { // evicts a again
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC() // the second cycle runs the cleanup that forgets a's weak reference
	if _, err := r.Compile(Starlark, "n", "a"); err != nil {
		t.Fatal(err)
	}
	if got := c.compiles.Load(); got != 4 {
		t.Fatalf("%d compiles, want 4: b again after a's revival evicted it, and a once nothing held it", got)
	}
}

func TestCompileKeyIncludesLanguageAndVersion(t *testing.T) {
	c := &fakeCompiler{}
	r := NewRuntime(Options{}, c)
	if _, err := r.Compile(JavaScript, "n", "a"); !errors.Is(err, ErrUnknownLanguage) {
		t.Fatalf("unknown language: %v", err)
	}
	k1 := newCacheKey(Starlark, "v1", "a")
	for _, k := range []cacheKey{newCacheKey(JavaScript, "v1", "a"), newCacheKey(Starlark, "v2", "a"), newCacheKey(Starlark, "v1", "b")} {
		if k == k1 {
			t.Fatalf("key %v collides with %v", k, k1)
		}
	}
}

func TestConcurrentFirstCompileCompilesOnce(t *testing.T) {
	c := &fakeCompiler{hold: make(chan struct{})}
	r := NewRuntime(Options{}, c)
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Compile(Starlark, "n", "same source")
			errs <- err
		}()
	}
	// Let every goroutine reach the cache before the one compile finishes.
	for r.Stats().Hits+r.Stats().Misses < n {
		time.Sleep(time.Millisecond)
	}
	close(c.hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := c.compiles.Load(); got != 1 {
		t.Fatalf("%d compiles, want 1", got)
	}
}

func TestCompileErrorsAreCachedUnderTheCallersName(t *testing.T) {
	c := &fakeCompiler{}
	r := NewRuntime(Options{}, c)
	for _, name := range []string{"first", "second", "first"} {
		_, err := r.Compile(Starlark, name, "!broken")
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: got %v, want *CompileError", name, err)
		}
		if ce.File != name || ce.Line != 1 || ce.Column != 2 {
			t.Fatalf("%s: error at %s:%d:%d", name, ce.File, ce.Line, ce.Column)
		}
	}
	if got := c.compiles.Load(); got != 1 {
		t.Fatalf("%d compiles, want 1", got)
	}
	if _, err := r.Compile(Starlark, "p", "panic"); err == nil || !strings.Contains(err.Error(), "compiler panic") {
		t.Fatalf("panicking compiler: %v", err)
	}
}

func TestRuntimeErrorFramesCarryTheCallersName(t *testing.T) {
	r := NewRuntime(Options{}, &fakeCompiler{})
	if _, err := r.Compile(Starlark, "first", "src"); err != nil {
		t.Fatal(err)
	}
	p, err := r.Compile(Starlark, "second", "src")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), Invocation{Function: "fail"})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Stack[0].File != "second" {
		t.Fatalf("got %#v", err)
	}
}

func TestEffectiveBudgetClampsToDefaultsAndCeilings(t *testing.T) {
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	r := NewRuntime(Options{
		Defaults: Budget{Timeout: 100 * time.Millisecond, MaxSteps: 1000, MaxMemory: 5 << 20},
		Ceilings: Budget{Timeout: time.Second, MaxSteps: 5000, MaxStackDepth: 50, MaxMemory: 1 << 20},
		Now:      func() time.Time { return now },
	}, &fakeCompiler{})
	cases := []struct {
		name string
		in   Budget
		want Budget
	}{
		{"zero takes defaults, defaults capped by ceilings", Budget{},
			Budget{Timeout: 100 * time.Millisecond, MaxSteps: 1000, MaxStackDepth: 50, MaxMemory: 1 << 20,
				MaxOutputBytes: DefaultBudget.MaxOutputBytes, MaxOutputObjects: DefaultBudget.MaxOutputObjects}},
		{"within ceilings kept", Budget{Timeout: 200 * time.Millisecond, MaxSteps: 4000, MaxStackDepth: 10, MaxMemory: 1000, MaxOutputBytes: 10, MaxOutputObjects: 3},
			Budget{Timeout: 200 * time.Millisecond, MaxSteps: 4000, MaxStackDepth: 10, MaxMemory: 1000, MaxOutputBytes: 10, MaxOutputObjects: 3}},
		{"above ceilings capped", Budget{Timeout: time.Hour, MaxSteps: 1 << 40, MaxStackDepth: 1 << 20, MaxMemory: 1 << 40, MaxOutputBytes: 1 << 40, MaxOutputObjects: 1 << 40},
			Budget{Timeout: time.Second, MaxSteps: 5000, MaxStackDepth: 50, MaxMemory: 1 << 20, MaxOutputBytes: DefaultCeilings.MaxOutputBytes, MaxOutputObjects: DefaultCeilings.MaxOutputObjects}},
	}
	p, err := r.Compile(Starlark, "n", "src")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := r.EffectiveBudget(c.in); got != c.want {
				t.Fatalf("EffectiveBudget = %+v, want %+v", got, c.want)
			}
			v, err := p.Call(context.Background(), Invocation{Function: "sync", Budget: c.in})
			if err != nil {
				t.Fatal(err)
			}
			inv := v.(Invocation)
			if inv.Budget != c.want {
				t.Fatalf("program saw %+v, want %+v", inv.Budget, c.want)
			}
			if inv.Now == nil || !inv.Now().Equal(now) {
				t.Fatal("program did not get the Runtime's clock")
			}
		})
	}
}
