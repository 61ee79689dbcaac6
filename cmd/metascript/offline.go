package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"metascript.dev/metascript/cmd/metascript/internal/hooktest"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/yamlpos"
	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/scripting"
)

// Exit codes of the offline commands.
const (
	exitOK = 0
	// exitFailed: the hook failed (compile, runtime, budget, output or webhook error), a test
	// case failed, or validate found an error.
	exitFailed = 1
	// exitUsage: bad flags or unusable input (unreadable file, no such controller or hook,
	// malformed request).
	exitUsage = 2
)

// unreadable reports a file that could not be read, `FILE: reason`, without the path that
// os repeats in its error.
func unreadable(path string, err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("%s: %v", path, err)
}

// offlineRuntime is the engine's scripting runtime (every language adapter the engine has),
// with the engine's budget flags and, when now is not zero, a clock fixed at now.
func offlineRuntime(now time.Time, budgets hookBudgetFlags) (*scripting.Runtime, error) {
	d, c, err := budgets.parse()
	if err != nil {
		return nil, err
	}
	opts := scripting.Options{Defaults: d, Ceilings: c}
	if !now.IsZero() {
		opts.Now = func() time.Time { return now }
	}
	return engine.NewRuntime(opts), nil
}

// offlineObjects are the ConfigMaps and Secrets of the given files: where hook sources and
// webhook connection settings are read offline (a hooks.SourceResolver and SecretReader);
// and the hook libraries given (-f or --library files), which hooks load.
type offlineObjects struct {
	manifest.ConfigMaps
	manifest.Secrets
	libraries []manifest.Library
}

func objectsOf(s *manifest.Set) offlineObjects {
	return offlineObjects{s.ConfigMaps, s.Secrets, s.Libraries}
}

// buildHook builds one hook of c the way the engine's manager does: ConfigMap sources, and
// what webhooks and endpointConfigs refer to, are read from objs, and the libraries its
// source loads are those of objs in c's scope.
func buildHook(ctx context.Context, rt *scripting.Runtime, objs offlineObjects, c *manifest.Controller,
	hook string) (hooks.Invoker, error) {
	h, err := c.Hook(hook)
	if err != nil {
		return nil, err
	}
	return hooks.Build(ctx, hooks.Spec{Controller: c.Ref(), Hook: hook, Def: h.Def, Shared: c.Script,
		ResponseFields: h.Response, EndpointConfigs: c.EndpointConfigs, Libraries: librariesFor(objs.libraries, c)}, rt, objs)
}

// hookLogger writes a hook's log lines (Starlark print, the log module) as text to w.
func hookLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		// Without timestamps, lines of a test run read the same on every run.
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// describe writes a hook error for a person: the typed error's own message (positions,
// stack traces and thrown values included) and, for a budget error, where the hook was
// when it was stopped.
func describe(err error) string {
	var b strings.Builder
	b.WriteString(err.Error())
	var be *scripting.BudgetError
	if errors.As(err, &be) {
		for _, f := range be.Stack {
			b.WriteString("\n\tat ")
			b.WriteString(f.String())
		}
	}
	var re *scripting.RuntimeError
	if errors.As(err, &re) && re.Thrown != nil {
		if t := hooktest.Render(re.Thrown); !strings.Contains(re.Msg, t) {
			b.WriteString("\n\tthrown: " + t)
		}
	}
	return b.String()
}

// located formats an error of one part of a controller (hooks.sync, script.starlark, spec)
// as `FILE: KIND/NAME PART: DETAIL`, KIND/NAME being c.Ref(). A compile error is placed in
// the file as validate places it, `FILE:LINE:COL: KIND/NAME FIELD: message`, when its source
// is a literal block of the file; otherwise its detail is `LINE:COL: message`, its position in
// the hook's source (prefixed with `script.LANGUAGE:` when it lies in the shared script).
func located(c *manifest.Controller, part string, err error) string {
	var ce *scripting.CompileError
	if errors.As(err, &ce) {
		if doc := controllerDocument(c); doc != nil {
			pos, field, msg := locate(doc, c, admission.Problem{Field: part, Ref: c.Ref(), Err: err})
			if ce.File == c.Descriptor.Ref(c.Declared.Key())+"/script" {
				field = "spec.script." + string(ce.Language) + ".source" // where the error is, not the hook that loads it
			}
			if pos.Line > 0 {
				return finding{pos: pos, ref: c.Ref(), field: field, msg: msg}.format(c.File)
			}
		}
	}
	return fmt.Sprintf("%s: %s %s: %s", c.File, c.Ref(), part, detail(c, part, err))
}

// controllerDocument is c's document in its file, with the positions of its fields; nil
// when the file cannot be read again (standard input) or no longer holds it.
func controllerDocument(c *manifest.Controller) *yamlpos.Document {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return nil
	}
	for _, d := range manifest.Documents(data) {
		if d.Line != c.Line || d.Err != nil {
			continue
		}
		if doc, err := yamlpos.Parse(d.Text, d.Start); err == nil {
			return doc
		}
	}
	return nil
}

func detail(c *manifest.Controller, part string, err error) string {
	var ce *scripting.CompileError
	if errors.As(err, &ce) {
		return admission.Problem{Field: part, Ref: c.Ref(), Err: err}.Detail()
	}
	// hooks.Build names the hook in its plain errors; the part already says it.
	return strings.TrimPrefix(describe(err), "hook "+strings.TrimPrefix(part, "hooks.")+": ")
}
