package javascript

import (
	"slices"
	"sync"

	"github.com/dop251/goja"

	"metascript.dev/metascript/stdlib"
)

// What a hook's Runtime offers beyond the ECMAScript built-ins, and what it takes away.
//
//   - Every stdlib module is a global (json, yaml, ...) and require(name) returns the same
//     module object; require of anything else throws. Module objects are made when first
//     used in a call, and a module's functions when first read.
//   - console.log/info/warn/error/debug write to the log module (the engine's structured
//     log); there is no other output.
//   - Code generation from strings is off: eval is absent, and Function and the
//     constructors of generator and async functions throw. goja's parser recurses without a
//     depth limit, so compiling a string a hook built could overflow the Go stack and kill
//     the process; it would also escape the source-shape checks made at compile time.
//   - ArrayBuffer, SharedArrayBuffer, DataView and the typed arrays are absent: they
//     allocate their whole size in one Go call, and a JSON hook has no use for them.
//   - goja itself has no timers, no file system, network, process or environment access;
//     Date and the stdlib time module read the invocation's injected clock.
//
// The global object a hook sees is a per-call overlay (globalObject) over the Runtime's own,
// which is frozen with everything it reaches (pool.go): the hook's writes to globals land in
// the overlay, and names are resolved lazily, so that an unused global costs nothing.
var blockedGlobals = map[string]bool{
	"eval": true, "ArrayBuffer": true, "SharedArrayBuffer": true, "DataView": true,
	"Int8Array": true, "Uint8Array": true, "Uint8ClampedArray": true, "Int16Array": true,
	"Uint16Array": true, "Int32Array": true, "Uint32Array": true, "Float32Array": true,
	"Float64Array": true, "BigInt64Array": true, "BigUint64Array": true,
}

// moduleSet is the stdlib modules a Program offers, indexed once.
type moduleSet struct {
	byName map[string]*stdlib.Module
	names  []string // sorted, for error messages
}

func indexModules(mods []*stdlib.Module) *moduleSet {
	s := &moduleSet{byName: make(map[string]*stdlib.Module, len(mods))}
	for _, m := range mods {
		s.byName[m.Name] = m
		s.names = append(s.names, m.Name)
	}
	slices.Sort(s.names)
	return s
}

var defaultModules = sync.OnceValue(func() *moduleSet { return indexModules(stdlib.All()) })

// newGlobal installs the call's global object on its Runtime.
func (cs *callState) newGlobal() {
	g := &globalObject{cs: cs, orig: cs.h.global}
	cs.global = cs.rt.NewDynamicObject(g)
	g.self = cs.global
	cs.rt.SetGlobalObject(cs.global)
}

// globalObject is the per-call global object: the hook's own globals over the Runtime's
// built-ins, with stdlib modules, require and console added and the blocked names removed.
type globalObject struct {
	cs   *callState
	self *goja.Object
	orig *goja.Object
	// vals caches resolved names and holds what the hook wrote.
	vals    map[string]goja.Value
	deleted map[string]bool
	added   []string
}

func (g *globalObject) Get(key string) goja.Value {
	if v, ok := g.vals[key]; ok {
		return v
	}
	if g.deleted[key] {
		return nil
	}
	v := g.resolve(key)
	if v == nil {
		return nil
	}
	if g.vals == nil {
		g.vals = make(map[string]goja.Value, 8)
	}
	g.vals[key] = v
	return v
}

// resolve is the value of a global the hook has not written.
func (g *globalObject) resolve(key string) goja.Value {
	cs := g.cs
	if blockedGlobals[key] {
		return nil
	}
	switch key {
	case "globalThis":
		return g.self
	case "Function":
		return cs.h.noCodeGen
	case "Array":
		return cs.h.array
	case "RegExp":
		return cs.h.regexp
	case "require":
		return cs.rt.ToValue(cs.require)
	case "console":
		if m, ok := cs.p.modules.byName["log"]; ok {
			return cs.rt.NewDynamicObject(&consoleObject{cs: cs, log: m})
		}
		return nil
	}
	if _, ok := cs.p.modules.byName[key]; ok {
		return cs.module(key)
	}
	return g.orig.Get(key)
}

func (g *globalObject) Set(key string, val goja.Value) bool {
	if g.vals == nil {
		g.vals = make(map[string]goja.Value, 8)
	}
	if _, known := g.vals[key]; !known && (g.deleted[key] || g.resolve(key) == nil) {
		g.added = append(g.added, key)
	}
	g.vals[key] = val
	return true
}

func (g *globalObject) Has(key string) bool { return g.Get(key) != nil }

func (g *globalObject) Delete(key string) bool {
	delete(g.vals, key)
	if i := slices.Index(g.added, key); i >= 0 {
		g.added = slices.Delete(g.added, i, i+1)
	}
	if g.deleted == nil {
		g.deleted = map[string]bool{}
	}
	g.deleted[key] = true
	return true
}

// Keys lists the enumerable globals: the stdlib modules and what the hook added (the
// built-ins are not enumerable).
func (g *globalObject) Keys() []string {
	keys := make([]string, 0, len(g.cs.p.modules.names)+2+len(g.added))
	for _, k := range g.cs.p.modules.names {
		if !g.deleted[k] {
			keys = append(keys, k)
		}
	}
	for _, k := range []string{"require", "console"} {
		if !g.deleted[k] && g.Get(k) != nil {
			keys = append(keys, k)
		}
	}
	return append(keys, g.added...)
}

// module returns the call's object for a stdlib module, made on first use.
func (cs *callState) module(name string) goja.Value {
	if v, ok := cs.modules[name]; ok {
		return v
	}
	v := cs.rt.NewDynamicObject(&moduleObject{cs: cs, m: cs.p.modules.byName[name]})
	if cs.modules == nil {
		cs.modules = make(map[string]goja.Value, 4)
	}
	cs.modules[name] = v
	return v
}

// require returns a stdlib module, the same object as the global of that name, or the
// exports of a library module the hook linked (library.go).
func (cs *callState) require(call goja.FunctionCall) goja.Value {
	return cs.requireFrom(call, cs.p.libs)
}

// installSymbolRegistry replaces Symbol.for and Symbol.keyFor, whose registry goja keeps
// per Runtime, by ones that use the current call's registry: a registered symbol would
// otherwise outlive its call, and the registry grow with every key any call registered.
func (h *hardRuntime) installSymbolRegistry() {
	rt := h.rt
	symbol := h.global.Get("Symbol").(*goja.Object)
	h.wrap(symbol, "for", func(_ goja.Callable, c goja.FunctionCall) goja.Value {
		cs := h.cur
		key := c.Argument(0).ToString().String()
		if s, ok := cs.symbols[key]; ok {
			return s
		}
		if cs.symbols == nil {
			cs.symbols = make(map[string]*goja.Symbol)
		}
		s := goja.NewSymbol(key)
		cs.symbols[key] = s
		return s
	})
	h.wrap(symbol, "keyFor", func(_ goja.Callable, c goja.FunctionCall) goja.Value {
		s, ok := c.Argument(0).(*goja.Symbol)
		if !ok {
			panic(rt.NewTypeError("%s is not a symbol", describe(c.Argument(0))))
		}
		for key, r := range h.cur.symbols {
			if r == s {
				return rt.ToValue(key)
			}
		}
		return goja.Undefined()
	})
}

// newError makes an Error with the built-in constructor, whatever the hook did to the
// global Error.
func (cs *callState) newError(msg string) *goja.Object {
	// The Runtime's own global object: the hook writes to its overlay only.
	o, err := cs.rt.New(cs.h.global.Get("Error"), cs.rt.ToValue(msg))
	if err != nil {
		panic(err)
	}
	return o
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
