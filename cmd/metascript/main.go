// Command metascript is the Metascript engine and its offline hook tools.
//
//	metascript run [flags]                       run the engine against a cluster
//	metascript hook run -f CONTROLLER.yaml ...   run one hook offline, print its response
//	metascript hook test FILE...                 run hook test cases written as YAML
//	metascript validate -f FILE...               compile every hook of every controller in FILEs
//	metascript convert -f FILE...                rewrite Metacontroller manifests as Metascript's
//	metascript admission [flags]                 a validating admission webhook for controller resources
//	metascript trace [flags]                     print a running engine's recent reconciles
//	metascript types [-o DIR]                    TypeScript declarations of JavaScript hooks
//	metascript version                           print the version
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
  metascript render -f CONTROLLER.yaml --parent PARENT.yaml [--observed FILE...] [--diff] [--until-stable]
  metascript convert -f FILE... [--inline starlark|javascript] [-o OUT]
                                                               Metacontroller manifests to Metascript's
  metascript admission --tls-cert-file FILE --tls-private-key-file FILE
                                                               refuse at apply time what the engine would
  metascript trace [--controller NAME] [--parent NS/NAME]      what a running engine's recent reconciles did
  metascript types [-o DIR]                                    TypeScript declarations of JavaScript hooks
  metascript version                                           print the version (also --version)

Controller kinds and their hooks (* the hook called for a parent that is not finalizing):
` + kindHooks(primary) + `
Run 'metascript <command> -h' (or --help) for the usage and flags of a command.
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
		return hookCommand(args[1:], os.Stdout, os.Stderr)
	case "validate":
		return validate(args[1:], os.Stdout, os.Stderr)
	case "render":
		return renderCommand(args[1:], os.Stdout, os.Stderr)
	case "convert":
		return convertManifests(args[1:], os.Stdout, os.Stderr)
	case "trace":
		return traceCommand(args[1:], os.Stdout, os.Stderr)
	case "admission":
		return admissionCommand(args[1:], os.Stderr)
	case "types":
		return typesCommand(args[1:], os.Stdout, os.Stderr)
	case hookWorkerCommand: // hidden: the isolated tier's worker process
		return hookWorker()
	case "version", "--version":
		return versionCommand(args[1:], os.Stdout, os.Stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(os.Stdout, usage)
		return 0
	}
	return unknownCommand(os.Stderr, "metascript", args[0])
}
