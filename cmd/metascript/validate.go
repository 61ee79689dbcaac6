package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/scripting"
)

var validateUsage = `Usage: metascript validate [-f] FILE...

Compiles every hook of every controller resource in the files, and the controllers' shared
scripts, as the engine would, and checks what the CRD schema cannot: that a hook's function
exists in its source, that an inline hook without source has a shared script to call, that
sources kept in ConfigMaps, and the Secrets and ConfigMaps a webhook's caBundle,
authorization, basicAuth or clientTLS name, are found and usable (pass the files that hold
them), and that the hooks a controller's kind requires are defined. Hooks are not called.

Controller kinds and their hooks (* required):
` + kindHooks(required) + `
Each problem is one line on stdout:
  FILE: KIND/NAME hooks.sync: LINE:COL: message
where KIND/NAME is one of
  ` + kindRefs() + `
and LINE:COL is the position in the hook's source; a summary line follows.

Exit status: 0 no problem; 1 a problem was found; 2 bad flags or no files.

Flags:
`

// validate is `metascript validate`.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", validateUsage, stderr)
	fileFlag := addFileFlag(fs, "file to validate (plain arguments are files too)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	files := append(*fileFlag, pos...)
	if len(files) == 0 {
		return usageError(fs, "no files; use -f FILE")
	}

	// Read every file first: a ConfigMap in one file may hold the source of a hook in another.
	read := make([]*manifest.File, len(files))
	readErrs := make([]error, len(files))
	for i, p := range files {
		read[i], readErrs[i] = manifest.ReadFile(p)
	}
	set := manifest.NewSet(slices.DeleteFunc(slices.Clone(read), func(f *manifest.File) bool { return f == nil })...)
	// Compile only: the clock and budgets do not matter, and top levels run under the
	// scripting defaults whatever the flags.
	rt, err := offlineRuntime(time.Time{}, hookBudgetFlags{})
	if err != nil {
		return usageError(fs, "%v", err)
	}
	problems, controllers, hooksSeen := 0, 0, 0
	report := func(line string) {
		fmt.Fprintln(stdout, line)
		problems++
	}
	for i, f := range read {
		if f == nil {
			report(unreadable(files[i], readErrs[i]))
			continue
		}
		// Problems in document order: undecodable documents and controllers interleaved.
		type finding struct {
			line  int
			lines []string
		}
		var found []finding
		for _, de := range f.Errors {
			found = append(found, finding{de.Line, []string{de.Error()}})
		}
		for _, c := range f.Controllers {
			controllers++
			hooksSeen += len(c.Hooks())
			found = append(found, finding{c.Line, checkController(context.Background(), rt, objectsOf(set), c)})
		}
		slices.SortStableFunc(found, func(a, b finding) int { return a.line - b.line })
		for _, fd := range found {
			for _, l := range fd.lines {
				report(l)
			}
		}
	}
	if controllers == 0 && problems == 0 {
		report(fmt.Sprintf("%s: no controller resource (%s) found", strings.Join(files, ", "),
			strings.Join(manifest.Kinds, ", ")))
	}
	fmt.Fprintf(stdout, "%s, %s, %s\n", phrase.Count(controllers, "controller"), phrase.Count(hooksSeen, "hook"),
		phrase.Count(problems, "problem"))
	if problems > 0 {
		return exitFailed
	}
	return exitOK
}

// checkController returns one line per problem of c: required hooks that are missing,
// shared scripts, then hooks in the order the engine builds them.
func checkController(ctx context.Context, rt *scripting.Runtime, objs offlineObjects, c *manifest.Controller) []string {
	var out []string
	for _, h := range c.Descriptor.Hooks {
		if _, err := c.Hook(h.Name); h.Required && err != nil {
			out = append(out, located(c, "hooks", fmt.Errorf("hooks.%s is required", h.Name)))
		}
	}
	// A shared script is compiled on its own, so that an error in it is reported once and
	// even when no hook calls it yet.
	sharedErrs := map[scripting.Language]*scripting.CompileError{}
	if sh := c.Script; sh != nil {
		for _, s := range []struct {
			lang scripting.Language
			src  *v1alpha1.ScriptSource
		}{{scripting.Starlark, sh.Starlark}, {scripting.JavaScript, sh.JavaScript}} {
			if s.src == nil {
				continue
			}
			part := "script." + string(s.lang)
			if err := compileShared(ctx, rt, objs.ConfigMaps, c, s.lang, s.src); err != nil {
				var ce *scripting.CompileError
				if errors.As(err, &ce) {
					sharedErrs[s.lang] = ce
				}
				out = append(out, located(c, part, err))
			}
		}
	}
	for _, h := range c.Hooks() {
		part := "hooks." + h.Name
		if err := checkForm(h.Def); err != nil {
			out = append(out, located(c, part, err))
			continue
		}
		_, err := buildHook(ctx, rt, objs, c, h.Name)
		var ce *scripting.CompileError
		if errors.As(err, &ce) && ce.File == sharedScriptName(c) && sameError(ce, sharedErrs[ce.Language]) {
			continue // reported with the shared script
		}
		if err != nil {
			out = append(out, located(c, part, err))
		}
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
	if err := phrase.ExactlyOne([]string{"starlark", "javascript", "webhook"}, forms); err != nil {
		return err
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
func compileShared(ctx context.Context, rt *scripting.Runtime, cms manifest.ConfigMaps, c *manifest.Controller,
	lang scripting.Language, src *v1alpha1.ScriptSource) error {
	code := src.Source
	switch {
	case src.Source != "" && src.ConfigMapRef != nil:
		return errors.New("exactly one of source or configMapRef must be set, got both")
	case src.ConfigMapRef != nil:
		var err error
		if code, err = cms.ConfigMapKey(ctx, *src.ConfigMapRef); err != nil {
			return err
		}
	case src.Source == "":
		return errors.New("exactly one of source or configMapRef must be set, got neither")
	}
	_, err := rt.Compile(lang, sharedScriptName(c), code)
	return err
}

func sameError(a, b *scripting.CompileError) bool {
	return b != nil && a.Line == b.Line && a.Column == b.Column && a.Msg == b.Msg
}
