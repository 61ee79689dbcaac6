package main

import (
	"fmt"
	"io"
)

var hookUsage = `Usage: metascript hook run|test [flags]

Runs hooks of controller resources offline, built and called as the engine does:

  run    call one hook once with a request and print its response
  test   run hook test cases written as YAML

Run 'metascript hook run -h' or 'metascript hook test -h' for their flags.
`

// hookCommand is `metascript hook`: it dispatches to its subcommands. Without one it prints
// its usage on stderr and exits 2; asked for help, on stdout and exits 0.
func hookCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, hookUsage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return hookRun(args[1:], stdout, stderr)
	case "test":
		return hookTest(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, hookUsage)
		return exitOK
	}
	return unknownCommand(stderr, "metascript hook", args[0])
}

// unknownCommand reports a command that parent does not have, in one line and a pointer to
// parent's help, and returns exitUsage.
func unknownCommand(stderr io.Writer, parent, name string) int {
	fmt.Fprintf(stderr, "%s: unknown command %q\nRun '%s -h' for its commands.\n", parent, name, parent)
	return exitUsage
}
