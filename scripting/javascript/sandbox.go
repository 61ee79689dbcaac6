package javascript

import (
	"log/slog"

	"github.com/dop251/goja"
)

// removedGlobals are built-ins a hook does not get: binary buffers allocate their full size
// in one call, and hooks exchange JSON-shaped values only.
var removedGlobals = []string{
	"ArrayBuffer", "SharedArrayBuffer", "DataView",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
	"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
}

// installSandbox prepares a new Runtime: guards on amplifying built-ins, console mapped to
// the invocation's log, require and the stdlib modules.
func (cs *callState) installSandbox() {
	g := cs.rt.GlobalObject()
	for _, name := range removedGlobals {
		_ = g.Delete(name)
	}
	cs.installGuards()

	console := cs.rt.NewObject()
	_ = console.Set("log", cs.print(slog.LevelInfo))
	_ = console.Set("info", cs.print(slog.LevelInfo))
	_ = console.Set("debug", cs.print(slog.LevelDebug))
	_ = console.Set("warn", cs.print(slog.LevelWarn))
	_ = console.Set("error", cs.print(slog.LevelError))
	_ = g.Set("console", console)
	cs.installStdlib(g)
}

var _ = goja.Undefined
