// Command metascript is the Metascript engine and its offline hook tools.
//
//	metascript run [flags]                       run the engine against a cluster
//	metascript hook run -f CONTROLLER.yaml ...   run one hook offline, print its response
//	metascript hook test FILE...                 run hook test cases written as YAML
//	metascript validate -f FILE...               compile every hook of every controller in FILEs
//	metascript convert -f FILE...                rewrite Metacontroller manifests as Metascript's
//	metascript admission [flags]                 a validating admission webhook for controller resources
//	metascript types [-o DIR]                    TypeScript declarations of JavaScript hooks
//
// This file dispatches to the commands; the work is in engine/ and scripting/.
package main

import (
	"fmt"
	"os"
)

var usage = `metascript — controllers as custom resources with inline Starlark and JavaScript hooks

Usage:
  metascript run [flags]                                       run the engine
  metascript hook run -f CONTROLLER.yaml [--hook HOOK] --request REQUEST.(json|yaml)
  metascript hook test FILE...                                 run hook test cases
  metascript validate -f FILE...                               compile every hook in FILEs
  metascript convert -f FILE... [--inline starlark|javascript] [-o OUT]
                                                               Metacontroller manifests to Metascript's
  metascript admission --tls-cert-file FILE --tls-private-key-file FILE
                                                               refuse at apply time what the engine would
  metascript types [-o DIR]                                    TypeScript declarations of JavaScript hooks

Controller kinds and their hooks (* the hook called for a parent that is not finalizing):
` + kindHooks(primary) + `
Run 'metascript <command> -h' for the flags of a command.
`

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch runs one command and returns the process exit code.
func dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runEngine(args[1:])
	case "hook":
		if len(args) < 2 {
			fmt.Fprint(os.Stderr, usage)
			return 2
		}
		switch args[1] {
		case "run":
			return hookRun(args[2:], os.Stdout, os.Stderr)
		case "test":
			return hookTest(args[2:], os.Stdout, os.Stderr)
		}
	case "validate":
		return validate(args[1:], os.Stdout, os.Stderr)
	case "convert":
		return convertManifests(args[1:], os.Stdout, os.Stderr)
	case "admission":
		return admissionCommand(args[1:], os.Stderr)
	case "types":
		return typesCommand(args[1:], os.Stdout, os.Stderr)
	case hookWorkerCommand: // hidden: the isolated tier's worker process
		return hookWorker()
	case "-h", "--help", "help":
		fmt.Fprint(os.Stdout, usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "metascript: unknown command %q\n\n%s", args[0], usage)
	return 2
}
