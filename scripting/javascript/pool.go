package javascript

import (
	_ "embed"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dop251/goja"
)

// hardRuntime is a goja Runtime prepared once for many calls, one at a time: the sandbox and
// the guarded built-ins are installed, and then every object reachable from the intrinsics
// is frozen (harden.js). A call sees the Runtime through a per-call global object (see
// globalObject), so what it can write lives in that call alone; see Program.Call for the
// argument that nothing survives a call.
type hardRuntime struct {
	rt *goja.Runtime
	// global is the Runtime's own global object, frozen; the hook sees it only through its
	// call's overlay.
	global *goja.Object
	// noCodeGen replaces Function and the constructors that compile strings.
	noCodeGen *goja.Object
	// array is the guarded proxy of the Array constructor (guardedArray).
	array *goja.Object
	// regexp is the guarded proxy of the RegExp constructor (guardedRegExp).
	regexp *goja.Object
	// reflectConstruct is Reflect.construct as the hook sees it, guarded (guard_loop.go),
	// for the constructors' proxies (guardedConstructor).
	reflectConstruct goja.Callable
	// flush is a no-op function: calling it runs the promise jobs a conversion queued.
	flush goja.Callable
	// addFn is $metascript$add (guard_add.go), handed to each call's wrapper; plus is
	// goja's own `+`, for the operands addFn leaves to it.
	addFn *goja.Object
	plus  goja.Callable
	// arithFn is $metascript$arith (guard_bigint.go); arithPrimitive runs the operation on
	// primitives, arithConvert converts object operands first.
	arithFn                      *goja.Object
	arithPrimitive, arithConvert goja.Callable
	// cur is the call using the Runtime; guards and the stdlib bridge charge it.
	cur *callState

	// wrapped and family record, while installGuards runs, which family wrapped which
	// built-in (claim).
	wrapped map[wrappedKey]string
	family  string
}

//go:embed harden.js
var hardenSource string

var hardenProgram = goja.MustCompile("<harden>", hardenSource, true)

// codeGenProtos evaluates to the prototypes whose constructor property compiles source.
var codeGenProtos = goja.MustCompile("<sandbox>",
	`[Object.getPrototypeOf(function*(){}), Object.getPrototypeOf(async function(){})]`, true)

// runtimesBuilt counts hardened Runtimes made, for tests that prove reuse.
var runtimesBuilt atomic.Int64

// newHardRuntime makes and hardens a Runtime. It costs milliseconds (every built-in is
// materialised to be frozen), which the pool spreads over many calls.
func newHardRuntime() *hardRuntime {
	rt := goja.New()
	h := &hardRuntime{rt: rt, global: rt.GlobalObject()}
	// The overlay hides them anyway; deleted before goja builds them, they cost neither
	// hardening time nor memory.
	for name := range blockedGlobals {
		must(h.global.Delete(name))
	}
	h.installNoCodeGen()
	h.installGuards()
	h.installSymbolRegistry()
	h.flush, _ = goja.AssertFunction(rt.ToValue(func(goja.FunctionCall) goja.Value { return goja.Undefined() }))

	fn, err := rt.RunProgram(hardenProgram)
	must(err)
	harden, _ := goja.AssertFunction(fn)
	_, err = harden(goja.Undefined(), rt.NewArray(h.noCodeGen, h.array, h.regexp, h.addFn, h.arithFn))
	must(err)
	runtimesBuilt.Add(1)
	return h
}

// installNoCodeGen replaces the constructors that compile strings: Function itself through
// the global overlay, and the constructor property of Function.prototype and of the
// prototypes of generator and async functions, which reach them from any function.
func (h *hardRuntime) installNoCodeGen() {
	rt := h.rt
	h.noCodeGen = rt.ToValue(func(goja.FunctionCall) goja.Value {
		panic(rt.NewTypeError("code generation from strings is disabled in hooks"))
	}).(*goja.Object)
	fnProto := h.noCodeGen.Prototype()
	must(h.noCodeGen.DefineDataProperty("prototype", fnProto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE))
	must(fnProto.DefineDataProperty("constructor", h.noCodeGen, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE))
	protos, err := rt.RunProgram(codeGenProtos)
	must(err)
	po := protos.(*goja.Object)
	for _, idx := range []string{"0", "1"} {
		must(po.Get(idx).(*goja.Object).DefineDataProperty("constructor", h.noCodeGen, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE))
	}
}

// runtimePool holds idle hardened Runtimes, most recently used first. It is bounded so that
// a burst of concurrent calls does not pin its Runtimes forever.
var runtimePool struct {
	mu   sync.Mutex
	idle []*hardRuntime
}

// maxIdleRuntimes bounds runtimePool: two per CPU the Go scheduler uses.
var maxIdleRuntimes = max(4, 2*runtime.GOMAXPROCS(0))

// getRuntime returns an idle Runtime, or a new one.
func getRuntime() *hardRuntime {
	runtimePool.mu.Lock()
	if n := len(runtimePool.idle); n > 0 {
		h := runtimePool.idle[n-1]
		runtimePool.idle[n-1] = nil
		runtimePool.idle = runtimePool.idle[:n-1]
		runtimePool.mu.Unlock()
		return h
	}
	runtimePool.mu.Unlock()
	return newHardRuntime()
}

var (
	// refilling is set while refillRuntime's build runs.
	refilling atomic.Bool
	// refillOff turns refillRuntime off, for tests that count idle Runtimes.
	refillOff atomic.Bool
)

// refillRuntime builds one Runtime for the pool in the background after a call discarded
// its own, so that a later call finds one ready instead of paying milliseconds for it. At
// most one such build runs at a time, which also bounds what a hook that fails on every
// call can make the engine spend on rebuilding.
func refillRuntime() {
	if refillOff.Load() || !refilling.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer refilling.Store(false)
		putRuntime(newHardRuntime())
	}()
}

// putRuntime returns h to the pool; only a call that ended cleanly may (see Program.Call).
func putRuntime(h *hardRuntime) {
	h.cur = nil
	h.rt.SetGlobalObject(h.global)
	runtimePool.mu.Lock()
	if len(runtimePool.idle) < maxIdleRuntimes {
		runtimePool.idle = append(runtimePool.idle, h)
	}
	runtimePool.mu.Unlock()
}
