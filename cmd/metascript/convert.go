package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"metascript.dev/metascript/cmd/metascript/internal/convert"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/scripting"
)

var convertUsage = `Usage: metascript convert [-f] FILE|-... [--inline starlark|javascript] [-o OUT]

Rewrites Metacontroller manifests as Metascript's: every controller resource of
apiVersion metacontroller.k8s.io/v1alpha1 (a ` + phrase.Either(convert.Kinds) + `)
gets apiVersion metascript.dev/v1alpha1, without what the API server set on it (status,
uid, resourceVersion, generation, creationTimestamp, managedFields, kubectl's
last-applied-configuration annotation). Other documents, Metascript controllers among them,
are copied as written, in order. Files are YAML or JSON, several documents allowed; the
items of a kind: List are converted one by one. A file named - is stdin:
  kubectl get compositecontrollers.metacontroller.k8s.io -o yaml | metascript convert -f -

With --inline, each webhook hook of those kinds, Metacontroller's or Metascript's, becomes
an inline stub in that language: a function named after the hook, whose comments give the
request it receives and the response it returns, and which fails with "fill me in" until it
is written, so that the controller writes nothing meanwhile. The webhook's address stays in
a comment. --hook and --controller narrow the webhooks replaced, to move hooks inline one at
a time. A ` + phrase.Either(otherKinds()) + `, a kind Metacontroller does not have, keeps its webhooks.

Comments inside a converted document are lost: it is decoded and encoded again
(sigs.k8s.io/yaml keeps no comments), its keys in alphabetical order; the comments above it
stay. Documents copied as written keep all of theirs.

What Metascript has no field for, or a value it cannot take, is reported on stderr:
  FILE:LINE: KIND/NAME FIELD: what was not converted and why
and the output is written all the same. Then, for each controller converted from
Metacontroller, what to do before switching over (the finalizer, the controller-uid label,
the decorator annotation, field ownership by server-side apply), and, for each controller
with webhooks, the Services and Secrets they use and whether its hook server is still
needed. A summary line ends the report. Stdout holds the converted YAML alone.

Exit status: 0 everything was converted; 1 something was not, as reported (the output is
written); 2 bad flags, or a file or document that cannot be read (nothing is written).

Flags:
`

// convertManifests is `metascript convert`.
func convertManifests(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("convert", convertUsage, stderr)
	fileFlag := addFileFlag(fs, "file to convert (plain arguments are files too)")
	var hooks stringList
	inline := fs.String("inline", "", "replace webhook hooks by inline stubs in this language: starlark or javascript")
	fs.Var(&hooks, "hook", "with --inline, replace only this hook's webhook: "+phrase.Either(convert.HookNames)+"; repeatable")
	controller := fs.String("controller", "", "with --inline, replace only the webhooks of this controller: NAME, or KIND/NAME")
	out := fs.String("o", "", "write the output to this file instead of stdout")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	files := append(*fileFlag, pos...)
	lang := scripting.Language(*inline)
	switch {
	case len(files) == 0:
		return usageError(fs, "no files; use -f FILE")
	case lang != "" && lang != scripting.Starlark && lang != scripting.JavaScript:
		return usageError(fs, "--inline %q: want starlark or javascript", *inline)
	case lang == "" && (len(hooks) > 0 || *controller != ""):
		return usageError(fs, "--hook and --controller choose what --inline replaces; add --inline starlark or --inline javascript")
	}
	for _, h := range hooks {
		if !slices.Contains(convert.HookNames, h) {
			return usageError(fs, "--hook %q: want one of %s", h, strings.Join(convert.HookNames, ", "))
		}
	}

	opts := convert.Options{Inline: lang, Hooks: hooks, Controller: *controller}
	var docs [][]byte
	var findings []convert.Finding
	var switchovers []convert.Switchover
	var total convert.Result
	failed := false
	if slices.Index(files, "-") >= 0 && slices.Index(files[slices.Index(files, "-")+1:], "-") >= 0 {
		return usageError(fs, "- (stdin) given twice")
	}
	for _, p := range files {
		data, err := readInput(p)
		if p == "-" {
			p = stdinName
		}
		if err != nil {
			fmt.Fprintln(stderr, unreadable(p, err))
			failed = true
			continue
		}
		r := convert.File(p, data, opts)
		for _, e := range r.Errors {
			fmt.Fprintln(stderr, e)
			failed = true
		}
		docs = append(docs, r.Documents...)
		findings = append(findings, r.Findings...)
		switchovers = append(switchovers, r.Switchovers...)
		total.Converted += r.Converted
		total.Stubs += r.Stubs
		total.Selected += r.Selected
	}
	if failed {
		return usageError(fs, "nothing written")
	}
	if *controller != "" && total.Selected == 0 {
		return usageError(fs, "--controller %s: no %s of that name in %s", *controller, phrase.Either(convert.Kinds),
			strings.Join(files, ", "))
	}

	output := bytes.Join(docs, []byte("---\n"))
	if *out != "" {
		err = os.WriteFile(*out, output, 0o644)
	} else {
		_, err = stdout.Write(output)
	}
	if err != nil {
		return usageError(fs, "writing the output: %v", err)
	}
	for _, f := range findings {
		fmt.Fprintln(stderr, f)
	}
	for _, s := range switchovers {
		writeSwitchover(stderr, s)
	}
	summary := phrase.Count(total.Converted, "controller") + " converted"
	if lang != "" {
		summary += ", " + phrase.Count(total.Stubs, string(lang)+" stub") + " written"
	}
	fmt.Fprintf(stderr, "%s, %d not converted\n", summary, len(findings))
	if len(findings) > 0 {
		return exitFailed
	}
	return exitOK
}

// stdinName names stdin (-) in reports.
const stdinName = "<stdin>"

// readInput reads the file at path, or stdin for "-".
func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// writeSwitchover writes what a controller asks for around the switch-over:
//
//	FILE:LINE: KIND/NAME switching over:
//	    STEP
//	    hook server: ...
func writeSwitchover(w io.Writer, s convert.Switchover) {
	if len(s.Steps) == 0 && len(s.HookServer) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:%d: %s switching over:\n", s.File, s.Line, s.Ref)
	for _, step := range s.Steps {
		fmt.Fprintf(w, "    %s\n", step)
	}
	for _, h := range s.HookServer {
		fmt.Fprintf(w, "    hook server: %s\n", h)
	}
}

// otherKinds are the controller kinds Metascript has and Metacontroller does not.
func otherKinds() []string {
	return slices.DeleteFunc(kinds.Names(), func(k string) bool { return slices.Contains(convert.Kinds, k) })
}
