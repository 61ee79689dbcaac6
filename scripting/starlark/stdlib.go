package starlark

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/stdlib"
)

// stdlibModules are the stdlib modules as frozen Starlark modules, made once per process.
var stdlibModules = sync.OnceValue(func() map[string]*starlarkstruct.Module {
	mods := make(map[string]*starlarkstruct.Module)
	for _, m := range stdlib.All() {
		members := make(starlark.StringDict, len(m.Functions)+len(m.Constants))
		for name, f := range m.Functions {
			members[name] = bridge(m.Name+"."+name, f)
		}
		for name, c := range m.Constants {
			members[name] = fromGo(c)
		}
		sm := &starlarkstruct.Module{Name: m.Name, Members: members}
		sm.Freeze()
		mods[m.Name] = sm
	}
	return mods
})

// loadStdlib is the Thread's Load: only stdlib modules, bound by the module's name and by
// each member's name, so load("json", "json") and load("json", "encode") both work.
func loadStdlib(_ *starlark.Thread, module string) (starlark.StringDict, error) {
	m, ok := stdlibModules()[module]
	if !ok {
		names := make([]string, 0, len(stdlibModules()))
		for n := range stdlibModules() {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("only stdlib modules (%s) and library modules (lib:LIBRARY/MODULE.star) can be loaded, not %q", strings.Join(names, ", "), module)
	}
	d := make(starlark.StringDict, len(m.Members)+1)
	for k, v := range m.Members {
		d[k] = v
	}
	d[module] = m
	return d, nil
}

// loader is the Thread's Load of a top level: stdlib modules, and library modules resolved
// through l (nil: none offered). from is the library of the module loading, "" for a hook.
func loader(l scripting.Linker, from string) func(*starlark.Thread, string) (starlark.StringDict, error) {
	return func(t *starlark.Thread, module string) (starlark.StringDict, error) {
		ref, isLib, err := scripting.ParseLibraryRef(module)
		if !isLib {
			return loadStdlib(t, module)
		}
		if err != nil {
			return nil, err
		}
		if l == nil {
			return nil, fmt.Errorf("%s: library modules cannot be loaded here (no libraries are offered)", module)
		}
		m, err := l.Module(from, ref)
		if err != nil {
			return nil, err
		}
		return m.(starlark.StringDict), nil
	}
}

// bridge exposes one stdlib function: arguments are converted to the JSON shape (request
// views are passed without copying; the function must not retain or mutate them), the
// result is converted back eagerly, and an error is reported at the calling line.
func bridge(name string, f stdlib.Func) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		cs := stateOf(t)
		meter := scripting.NewOutputMeter(scripting.Starlark, scripting.ArgumentBudget(cs.budget()))
		c := converter{meter: &meter, shareViews: true}
		gargs := make([]any, len(args))
		for i, a := range args {
			g, err := c.value(a, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: argument %d: %w", name, i+1, err)
			}
			gargs[i] = g
		}
		var gkw []stdlib.Kwarg
		if len(kwargs) > 0 {
			gkw = make([]stdlib.Kwarg, len(kwargs))
			for i, kv := range kwargs {
				k := string(kv[0].(starlark.String))
				g, err := c.value(kv[1], 0)
				if err != nil {
					return nil, fmt.Errorf("%s: argument %s: %w", name, k, err)
				}
				gkw[i] = stdlib.Kwarg{Name: k, Value: g}
			}
		}
		res, err := f(cs.stdlibEnv(), gargs, gkw)
		if err != nil {
			return nil, err // stdlib errors name their function already
		}
		return fromGo(res), nil
	})
}
