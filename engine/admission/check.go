// Package admission decides, without running anything, whether the engine would refuse a
// controller resource: it decodes the resource strictly through its kind's descriptor,
// compiles every hook and shared script with positions, checks budgets against the engine's
// ceilings and a namespaced controller's confinement to its namespace, and, given discovery,
// resolves its resources and configures it as the manager would. `metascript validate`
// (offline, on files) and `metascript admission` (a validating webhook, Handler) both check
// through it, so that they refuse alike and as the engine does.
package admission

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
)

// Problem is one reason the engine would refuse a controller.
type Problem struct {
	// Field is where the problem lies, relative to spec:
	// hooks.sync, script.starlark, hooks.sync.budget.timeout, serviceAccount.namespace.
	// Empty for a problem of the whole resource (it could not be decoded).
	Field string
	// Ref names the controller (compositecontroller/NAME) for compile positions.
	Ref string
	Err error
}

// Path is the problem's field path from the top of the resource: spec.hooks.sync.starlark.source
// for a compile error in a hook's own source, spec.FIELD otherwise.
func (p Problem) Path() string {
	if p.Field == "" {
		return ""
	}
	path := "spec." + p.Field
	var ce *scripting.CompileError
	if errors.As(p.Err, &ce) && strings.HasPrefix(p.Field, "hooks.") && ce.File != p.Ref+"/script" {
		path += "." + string(ce.Language) + ".source"
	} else if errors.As(p.Err, &ce) && strings.HasPrefix(p.Field, "script.") {
		path += ".source"
	}
	return path
}

// Detail is the problem without its field: `LINE:COL: message` for a compile error (its
// position in the source), prefixed `script.LANGUAGE:` when the error lies in the shared
// script a hook calls.
func (p Problem) Detail() string {
	var ce *scripting.CompileError
	if !errors.As(p.Err, &ce) {
		// hooks.Build names the hook in its plain errors; the field already says it.
		return strings.TrimPrefix(p.Err.Error(), "hook "+strings.TrimPrefix(p.Field, "hooks.")+": ")
	}
	var b strings.Builder
	if ce.File == p.Ref+"/script" && strings.HasPrefix(p.Field, "hooks.") {
		b.WriteString("script." + string(ce.Language) + ":")
	}
	if ce.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", ce.Line, ce.Column)
	}
	b.WriteString(ce.Msg)
	return b.String()
}

// Error is `PATH: DETAIL`, or the detail alone for a problem of the whole resource.
func (p Problem) Error() string {
	if p.Field == "" {
		return p.Detail()
	}
	return p.Path() + ": " + p.Detail()
}

// Options say what a check may use.
type Options struct {
	// Compiler compiles hook sources: the engine's scripting runtime. Required.
	Compiler hooks.Compiler
	// Objects read the ConfigMaps and Secrets hooks refer to. Nil: they are not read, and a
	// hook whose source or webhook settings need one is not built (its references are still
	// checked for confinement).
	Objects hooks.SourceResolver
	// Libraries, when set, are the hook libraries the hooks of a controller may load, given
	// its kind's scope and its namespace (as the engine's manager chooses them); the hooks
	// are compiled linked to them. Nil: the libraries are not seen (the admission webhook),
	// and an inline source that loads one is not compiled, because a library may be created
	// after the controllers that load it; the engine reports a missing or broken library as
	// a condition of each controller that loads it.
	Libraries func(namespaced bool, namespace string) scripting.Libraries
	// Ceilings, when set, are the engine's budget ceilings: a hook asking for more is a
	// problem (the engine would run it capped).
	Ceilings *scripting.Budget
	// WebhookCeiling, when positive, is the engine's ceiling of webhook timeouts: a webhook
	// asking for more is a problem, as a budget over Ceilings is.
	WebhookCeiling time.Duration
	// Resolver, when set, resolves the controller's resources through discovery; then the
	// resources' scope and the kind's own spec rules (Descriptor.Configure) are checked too.
	// A resource not served yet is no problem: the engine waits for it.
	Resolver interface {
		Resolve(apiVersion, resource string) (resources.Resource, error)
	}
}

// Check decodes obj, a controller resource of kind in JSON shape, and returns every problem
// the engine would refuse it for, in the order the engine meets them; none when it would
// run it. The kind's own spec rules (Options.Resolver) are checked only when nothing else
// is wrong: they need its hooks, and the engine stops at the first of them too. It never
// calls a hook.
func Check(ctx context.Context, kind *reconcile.Descriptor, obj map[string]any, opts Options) []Problem {
	decl, err := Read(kind, obj)
	if err != nil {
		return []Problem{{Err: err}}
	}
	ref := kind.Ref(decl.Key())
	problems := Controller(ctx, kind, decl, opts)
	if len(problems) > 0 || opts.Resolver == nil {
		return problems
	}
	if err := configure(kind, decl, obj, opts); err != nil {
		field, rest := splitField(err)
		problems = append(problems, Problem{Field: field, Ref: ref, Err: rest})
	}
	return problems
}

// Controller returns the problems of a decoded controller that need no cluster: required hooks,
// shared scripts, each hook's form and build (compile, webhook settings), budgets over the
// ceilings, and a namespaced controller's references outside its namespace.
func Controller(ctx context.Context, kind *reconcile.Descriptor, decl *reconcile.Declared, opts Options) []Problem {
	ref := kind.Ref(decl.Key())
	var out []Problem
	add := func(field string, err error) { out = append(out, Problem{Field: field, Ref: ref, Err: err}) }
	for _, h := range kind.Hooks {
		if h.Required && decl.Hooks[h.Name] == nil {
			add("hooks", fmt.Errorf("hooks.%s is required", h.Name))
		}
	}
	objects := opts.Objects
	if objects == nil {
		objects = unread{}
	}
	var libs scripting.Libraries
	if opts.Libraries != nil {
		libs = opts.Libraries(kind.Namespaced, decl.Namespace)
	}
	// A shared script is compiled on its own, so that an error in it is reported once and
	// even when no hook calls it yet.
	sharedErrs := map[scripting.Language]*scripting.CompileError{}
	if sh := decl.Script; sh != nil {
		for _, s := range []struct {
			lang scripting.Language
			src  *v1alpha1.ScriptSource
		}{{scripting.Starlark, sh.Starlark}, {scripting.JavaScript, sh.JavaScript}} {
			if s.src == nil || libs == nil && len(scripting.LibraryNames(s.src.Source)) > 0 {
				continue
			}
			err := compileShared(ctx, opts.Compiler, objects, libs, ref, s.lang, s.src)
			var ce *scripting.CompileError
			if errors.As(err, &ce) {
				sharedErrs[s.lang] = ce
			}
			if err != nil && !errors.Is(err, errNotRead) {
				add("script."+string(s.lang), err)
			}
		}
	}
	for _, h := range kind.Hooks {
		def := decl.Hooks[h.Name]
		if def == nil {
			continue
		}
		field := "hooks." + h.Name
		if err := checkForm(def); err != nil {
			add(field, err)
			continue
		}
		var err error
		if libs != nil || !loadsLibraries(def, decl.Script) {
			_, err = hooks.Build(ctx, hooks.Spec{Controller: ref, Hook: h.Name, Def: def, Shared: decl.Script,
				ResponseFields: h.Response, EndpointConfigs: decl.EndpointConfigs, Libraries: libs}, opts.Compiler, objects)
		}
		var ce *scripting.CompileError
		switch {
		case errors.As(err, &ce) && ce.File == ref+"/script" && sameError(ce, sharedErrs[ce.Language]):
			// reported with the shared script
		case err != nil && !errors.Is(err, errNotRead):
			add(field, err)
		}
		for _, c := range capped(def, opts) {
			name, msg, _ := strings.Cut(c, " ")
			add(field+"."+name, errors.New(msg))
		}
	}
	if _, err := reconcile.ServiceAccount(kind, decl); err != nil {
		field, rest := splitField(err)
		add(field, rest)
	}
	if kind.Namespaced {
		out = append(out, confinement(kind, decl, ref)...)
	}
	return out
}

// checkForm checks what hooks.Build takes for granted: exactly one form, and a webhook url
// that an HTTP client can use.
func checkForm(h *v1alpha1.Hook) error {
	var forms []string
	if h.Starlark != nil {
		forms = append(forms, "starlark")
	}
	if h.JavaScript != nil {
		forms = append(forms, "javascript")
	}
	if h.Webhook != nil {
		forms = append(forms, "webhook")
	}
	if len(forms) != 1 {
		// Worded as cmd/metascript's phrase.ExactlyOne words every such choice.
		got := fmt.Sprint(len(forms))
		if len(forms) > 0 {
			got += " (" + strings.Join(forms, ", ") + ")"
		}
		return fmt.Errorf("exactly one of starlark, javascript or webhook must be set, got %s", got)
	}
	if w := h.Webhook; w != nil && w.URL != nil {
		u, err := url.Parse(*w.URL)
		if err != nil {
			return fmt.Errorf("webhook url: %v", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("webhook url %q: want http:// or https:// and a host", *w.URL)
		}
	}
	return nil
}

// compileShared compiles a controller's shared script under the name hooks.Build uses, so
// the compile cache serves the hooks that call it.
func compileShared(ctx context.Context, c hooks.Compiler, objects hooks.SourceResolver, libs scripting.Libraries, ref string,
	lang scripting.Language, src *v1alpha1.ScriptSource) error {
	code := src.Source
	switch {
	case src.Source != "" && src.ConfigMapRef != nil:
		return errors.New("exactly one of source or configMapRef must be set, got both")
	case src.ConfigMapRef != nil:
		var err error
		if code, err = objects.ConfigMapKey(ctx, *src.ConfigMapRef); err != nil {
			return err
		}
	case src.Source == "":
		return errors.New("exactly one of source or configMapRef must be set, got neither")
	}
	if lc, ok := c.(hooks.LinkingCompiler); ok && libs != nil {
		_, err := lc.CompileLinked(lang, ref+"/script", code, libs)
		return err
	}
	_, err := c.Compile(lang, ref+"/script", code)
	return err
}

// loadsLibraries reports whether the inline source hook def runs loads hook libraries: its
// own source, or the shared script of its language when it names only a function.
func loadsLibraries(def *v1alpha1.Hook, shared *v1alpha1.SharedScript) bool {
	for _, s := range []struct {
		hook   *v1alpha1.InlineScript
		shared *v1alpha1.ScriptSource
	}{{def.Starlark, sharedOf(shared, true)}, {def.JavaScript, sharedOf(shared, false)}} {
		switch {
		case s.hook == nil:
		case s.hook.Source != "":
			return len(scripting.LibraryNames(s.hook.Source)) > 0
		case s.shared != nil:
			return len(scripting.LibraryNames(s.shared.Source)) > 0
		}
	}
	return false
}

// sharedOf is the shared script's Starlark (starlark) or JavaScript source, nil without one.
func sharedOf(shared *v1alpha1.SharedScript, starlark bool) *v1alpha1.ScriptSource {
	switch {
	case shared == nil:
		return nil
	case starlark:
		return shared.Starlark
	}
	return shared.JavaScript
}

func sameError(a, b *scripting.CompileError) bool {
	return b != nil && a.Line == b.Line && a.Column == b.Column && a.Msg == b.Msg
}

// errNotRead is what unread answers: the object was not read, which is no problem of the
// controller's.
var errNotRead = errors.New("not read here")

// unread reads no ConfigMap or Secret: a check without Options.Objects builds what it can
// without them.
type unread struct{}

func (unread) ConfigMapKey(context.Context, v1alpha1.ConfigMapKeyRef) (string, error) {
	return "", errNotRead
}

func (unread) SecretKey(context.Context, v1alpha1.SecretKeyRef) ([]byte, error) {
	return nil, errNotRead
}

// capped lists what of a hook's budget or webhook timeout is over the engine's ceilings, as
// hooks.Capped does; without Ceilings, only a webhook's timeout is checked.
func capped(def *v1alpha1.Hook, opts Options) []string {
	if opts.Ceilings != nil {
		return hooks.Capped(def, *opts.Ceilings, opts.WebhookCeiling)
	}
	if def.Webhook != nil {
		return hooks.Capped(def, scripting.Budget{}, opts.WebhookCeiling)
	}
	return nil
}
