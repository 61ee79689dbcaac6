package javascript

import (
	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
)

// Generator nesting. goja runs `yield* inner` by calling inner's next from Go while the
// outer generator is suspended, so a chain of delegating generators recurses on the Go
// stack without adding to goja's call stack, which MaxStackDepth bounds:
//
//	function* g(n) { if (n > 0) yield* g(n - 1); else yield 1; }
//	[...g(700000)]   // the Go stack passes 1 GB: a fatal stack overflow kills the process
//
// and an interrupt unwinds such a chain in time quadratic in its depth (9.6 s past a 200 ms
// deadline at 8000 levels). The guard wraps the generator prototype's next, return and
// throw, which delegation calls, and counts them against MaxStackDepth: a call nested deeper
// than that fails the stack-depth budget.

func init() {
	registerGuards("iter", func(h *hardRuntime) {
		h.installGeneratorGuard()
		h.installIteratorGuard()
	})
}

var generatorProto = goja.MustCompile("<sandbox>",
	`Object.getPrototypeOf(Object.getPrototypeOf((function* () {})()))`, true)

func (h *hardRuntime) installGeneratorGuard() {
	v, err := h.rt.RunProgram(generatorProto)
	must(err)
	proto := v.(*goja.Object)
	for _, name := range []string{"next", "return", "throw"} {
		h.wrap(proto, name, func(orig goja.Callable, c goja.FunctionCall) goja.Value {
			cs := h.cur
			cs.generatorDepth++
			defer func() { cs.generatorDepth-- }()
			if cs.generatorDepth > cs.budget().MaxStackDepth {
				cs.refuse(cs.stackExceeded(nil))
			}
			return call(orig, c.This, c.Arguments...)
		})
	}
}

// Iterators. Spreading ([...a], f(...a)), Array.from, new Set(a) and new Map(a) drive an
// iterator to its end in Go. On a sparse array or a long string, each step allocates an
// iterator result of some 600 bytes: [...a] of a[2 ** 22] = 1 allocated 2.4 GiB in 4.4 s
// before the watchdog's interrupt could take effect. The guard wraps the next method of the
// array and string iterators, which every step calls, to end the loop at the next step once
// the invocation has been stopped.
var builtinIteratorProtos = goja.MustCompile("<sandbox>",
	`[Object.getPrototypeOf([][Symbol.iterator]()), Object.getPrototypeOf(""[Symbol.iterator]())]`, true)

func (h *hardRuntime) installIteratorGuard() {
	v, err := h.rt.RunProgram(builtinIteratorProtos)
	must(err)
	for _, idx := range []string{"0", "1"} {
		h.wrap(v.(*goja.Object).Get(idx).(*goja.Object), "next", func(orig goja.Callable, c goja.FunctionCall) goja.Value {
			if h.cur.watch.Reason() != scripting.NotStopped {
				panic(h.rt.NewTypeError("iteration stopped: the hook was stopped"))
			}
			return call(orig, c.This, c.Arguments...)
		})
	}
}
