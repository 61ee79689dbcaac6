package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/scripting"
)

var validateUsage = `Usage: metascript validate [-f] FILE...

Compiles every hook of every controller resource in the files, and the controllers' shared
scripts, as the engine would, and checks what the CRD schema cannot: that a hook's function
exists in its source, that an inline hook without source has a shared script to call, that
sources kept in ConfigMaps, and the Secrets and ConfigMaps a webhook's caBundle,
authorization, basicAuth or clientTLS name, are found and usable (pass the files that hold
them), that the hooks a controller's kind requires are defined, and that spec.serviceAccount
and a namespaced controller's ConfigMap and Secret references stay in its namespace. These
are the checks of 'metascript admission', offline. Hooks are not called.

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

// checkController returns one line per problem of c, as the engine's admission check finds
// them with the files' ConfigMaps and Secrets: required hooks that are missing, shared
// scripts, then hooks in the order the engine builds them.
func checkController(ctx context.Context, rt *scripting.Runtime, objs offlineObjects, c *manifest.Controller) []string {
	var out []string
	for _, p := range admission.Controller(ctx, c.Descriptor, c.Declared, admission.Options{Compiler: rt, Objects: objs}) {
		out = append(out, fmt.Sprintf("%s: %s %s: %s", c.File, c.Ref(), p.Field, p.Detail()))
	}
	return out
}
