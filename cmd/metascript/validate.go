package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
)

var validateUsage = `Usage: metascript validate [-f] FILE...

Checks every controller resource in the files as the API server would, then as the engine
would, and reports every problem of every document:
  - against the CRDs of manifests/crds (built in), with the API server's own validation:
    fields the schema does not declare (refused under strict field validation), types,
    enums, minimums, patterns and the x-kubernetes-validations rules;
  - values the schema lets pass but the engine cannot read (a budget.timeout that is no
    duration);
  - every hook and shared script compiled as the engine would; that a hook's function exists
    in its source, that an inline hook without source has a shared script to call, that
    sources kept in ConfigMaps, and the Secrets and ConfigMaps a webhook's caBundle,
    authorization, basicAuth or clientTLS name, are found and usable (pass the files that
    hold them), that the hooks a controller's kind requires are defined, and that
    spec.serviceAccount and a namespaced controller's ConfigMap and Secret references stay in
    its namespace: the checks of 'metascript admission', offline. Hooks are not called.
A Metacontroller resource (metacontroller.k8s.io) is a problem: convert it first.
The hook libraries hooks load (lib:NAME/MODULE) are read from the --library files and the
checked files, scoped as the engine scopes them (docs/hook-libraries.md, "Offline").

Controller kinds and their hooks (* required):
` + kindHooks(required) + `
Each problem is one line on stdout, in file order:
  FILE:LINE:COL: KIND/NAME FIELD: message
where LINE:COL is where FIELD is written in FILE (for a compile error in a literal block
source, 'source: |', the position of the error in the file; in any other source, the
field's, and the message starts with the position in the source), KIND/NAME is one of
  ` + kindRefs() + `
and FIELD is the path from the resource's top (spec.hooks.sync.budget.maxSteps). Messages of
the schema are worded as the API server words them. A summary line follows.

Exit status: 0 no problem; 1 a problem was found; 2 bad flags, no files, or a file that
could not be read.

Flags:
`

// validate is `metascript validate`.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", validateUsage, stderr)
	fileFlag := addFileFlag(fs, "file to validate (plain arguments are files too)")
	libraryFlag := addLibraryFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	files := append(*fileFlag, pos...)
	if len(files) == 0 {
		return usageError(fs, "no files; use -f FILE")
	}

	// Read every file first: a ConfigMap in one file may hold the source of a hook in another.
	data := make([][]byte, len(files))
	readErrs := make([]error, len(files))
	var parsed []*manifest.File
	for i, p := range files {
		if data[i], readErrs[i] = os.ReadFile(p); readErrs[i] == nil {
			parsed = append(parsed, manifest.Parse(p, data[i]))
		}
	}
	extra, err := readLibraryFiles(*libraryFlag)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	objs := objectsOf(manifest.NewSet(parsed...))
	objs.libraries = append(objs.libraries, extra...)
	if err := checkLibraries(objs.libraries); err != nil {
		return usageError(fs, "%v", err)
	}
	// Compile only: the clock and budgets do not matter, and top levels run under the
	// scripting defaults whatever the flags.
	rt, err := offlineRuntime(time.Time{}, hookBudgetFlags{})
	if err != nil {
		return usageError(fs, "%v", err)
	}
	problems, controllers, hooksSeen, unread := 0, 0, 0, false
	report := func(line string) {
		fmt.Fprintln(stdout, line)
		problems++
	}
	for i, p := range files {
		if readErrs[i] != nil {
			report(unreadable(p, readErrs[i]))
			unread = true
			continue
		}
		fc := checkFile(context.Background(), rt, objs, p, data[i])
		controllers += fc.controllers
		hooksSeen += fc.hooks
		for _, f := range fc.found {
			report(f.format(p))
		}
	}
	if controllers == 0 && problems == 0 {
		report(fmt.Sprintf("%s: no controller resource (%s) found", strings.Join(files, ", "),
			strings.Join(manifest.Kinds, ", ")))
	}
	fmt.Fprintf(stdout, "%s, %s, %s\n", phrase.Count(controllers, "controller"), phrase.Count(hooksSeen, "hook"),
		phrase.Count(problems, "problem"))
	switch {
	case unread:
		return exitUsage // bad input, as in every command
	case problems > 0:
		return exitFailed
	}
	return exitOK
}
