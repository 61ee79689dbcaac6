package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"metascript.dev/metascript/cmd/metascript/internal/tsdecl"
)

var typesUsage = `Usage: metascript types [-o DIR]

Writes the TypeScript declarations of JavaScript hooks, ` + tsdecl.FileName + `: the request and
response of every hook of every controller kind, and the stdlib modules. With ` + "`// @ts-check`" + `
and a JSDoc type on each hook function, an editor or tsc checks the hook against them:

  // @ts-check
  /// <reference path="` + tsdecl.FileName + `" />
  /** @type {metascript.CompositeControllerSync} */
  function sync(request) { ... }

The type of each hook:
` + hookTypes() + `
Exit status: 0 written; 1 the file could not be written; 2 bad flags.

Flags:
`

// typesCommand is `metascript types`.
func typesCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("types", typesUsage, stderr)
	dir := fs.String("o", "", "directory to write "+tsdecl.FileName+" into (created if missing); default: stdout")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments %q", fs.Args())
	}
	text, err := tsdecl.Generate()
	if err != nil {
		fmt.Fprintf(stderr, "metascript types: %v\n", err)
		return exitFailed
	}
	if *dir == "" {
		_, err = io.WriteString(stdout, text)
	} else if err = os.MkdirAll(*dir, 0o755); err == nil {
		err = os.WriteFile(filepath.Join(*dir, tsdecl.FileName), []byte(text), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "metascript types: %v\n", err)
		return exitFailed
	}
	return exitOK
}
