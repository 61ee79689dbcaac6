package javascript

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/stdlib"
)

// moduleObject is one stdlib module as seen by one call: functions are made on first use
// and cached; constants are request-style views. A hook may overwrite or delete members; the
// change lives in this call's object only.
type moduleObject struct {
	cs      *callState
	m       *stdlib.Module
	members map[string]goja.Value
	deleted map[string]bool
}

func (o *moduleObject) Get(key string) goja.Value {
	if v, ok := o.members[key]; ok {
		return v
	}
	if o.deleted[key] {
		return nil
	}
	var v goja.Value
	if f, ok := o.m.Functions[key]; ok {
		v = o.cs.bridge(o.m.Name+"."+key, f)
	} else if c, ok := o.m.Constants[key]; ok {
		v = o.cs.toJS(c)
	} else {
		return nil
	}
	if o.members == nil {
		o.members = make(map[string]goja.Value, 4)
	}
	o.members[key] = v
	return v
}

func (o *moduleObject) Set(key string, val goja.Value) bool {
	if o.members == nil {
		o.members = make(map[string]goja.Value, 4)
	}
	o.members[key] = val
	delete(o.deleted, key)
	return true
}

func (o *moduleObject) Has(key string) bool { return o.Get(key) != nil }

func (o *moduleObject) Delete(key string) bool {
	delete(o.members, key)
	if o.deleted == nil {
		o.deleted = map[string]bool{}
	}
	o.deleted[key] = true
	return true
}

func (o *moduleObject) Keys() []string {
	var keys []string
	for k := range o.m.Functions {
		keys = append(keys, k)
	}
	for k := range o.m.Constants {
		keys = append(keys, k)
	}
	for k := range o.members {
		if _, ok := o.m.Functions[k]; !ok {
			if _, ok := o.m.Constants[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return o.deleted[k] })
	slices.Sort(keys)
	return keys
}

// bridge exposes one stdlib function. Arguments are converted to the JSON shape (request
// views the hook has not changed are passed without copying: stdlib functions neither retain
// nor mutate their arguments; undefined becomes null, which selects an optional argument's
// default). The result reaches the hook as a copy-on-write view. An error is thrown as an
// Error at the calling line, except a budget refusal, which stops the hook.
func (cs *callState) bridge(name string, f stdlib.Func) goja.Value {
	return cs.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		c := newConverter(cs)
		c.shareViews = true
		args := make([]any, len(call.Arguments))
		for i, a := range call.Arguments {
			g, err := c.value(a, 0)
			if err != nil {
				var be *scripting.BudgetError
				if errors.As(err, &be) {
					cs.refuse(be)
				}
				panic(cs.newError(fmt.Sprintf("%s: argument %d: %v", name, i+1, err)))
			}
			args[i] = g
		}
		res, err := f(cs.stdlibEnv(), args, nil)
		if err != nil {
			var be *scripting.BudgetError
			if errors.As(err, &be) {
				cs.refuse(be)
			}
			panic(cs.newError(err.Error()))
		}
		return cs.toJS(res)
	})
}

// consoleObject maps console methods to the log module, so that code written for Node
// logs through the engine. Arguments are joined with spaces; non-strings are shown as JSON.
type consoleObject struct {
	cs      *callState
	log     *stdlib.Module
	members map[string]goja.Value
}

var consoleLevels = map[string]string{"log": "info", "info": "info", "debug": "debug", "warn": "warn", "error": "error"}

func (o *consoleObject) Get(key string) goja.Value {
	if v, ok := o.members[key]; ok {
		return v
	}
	level, ok := consoleLevels[key]
	if !ok {
		return nil
	}
	f := o.log.Functions[level]
	if f == nil {
		return nil
	}
	cs := o.cs
	v := cs.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		var b strings.Builder
		for i, a := range call.Arguments {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(cs.display(a))
		}
		if _, err := f(cs.stdlibEnv(), []any{b.String()}, nil); err != nil {
			panic(cs.newError(err.Error()))
		}
		return goja.Undefined()
	})
	if o.members == nil {
		o.members = map[string]goja.Value{}
	}
	o.members[key] = v
	return v
}

func (o *consoleObject) Set(key string, val goja.Value) bool {
	if o.members == nil {
		o.members = map[string]goja.Value{}
	}
	o.members[key] = val
	return true
}

func (o *consoleObject) Has(key string) bool { return o.Get(key) != nil }

func (o *consoleObject) Delete(key string) bool {
	o.Set(key, goja.Undefined())
	return true
}

func (o *consoleObject) Keys() []string {
	return []string{"debug", "error", "info", "log", "warn"}
}

// display renders a console argument: strings as they are, JSON values as JSON, anything
// else by its string conversion.
func (cs *callState) display(v goja.Value) string {
	if _, isObj := v.(*goja.Object); !isObj && goja.IsString(v) {
		return v.String()
	}
	c := newConverter(cs)
	c.shareViews = true
	if g, err := c.value(v, 0); err == nil {
		if b, err := json.Marshal(g); err == nil {
			return string(b)
		}
	}
	return safeString(cs.rt, v)
}
