package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"metascript.dev/metascript/cmd/metascript/internal/hooktest"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
)

// stdin is read by `--request -`.
var stdin io.Reader = os.Stdin

var hookRunUsage = `Usage: metascript hook run -f CONTROLLER.yaml [--hook HOOK] --request REQUEST.(json|yaml) [flags]

Builds one hook of a controller resource exactly as the engine does and calls it once with
the request; prints the response as JSON on stdout. The hook's log lines and errors go to
stderr. Webhook hooks are called too, at their url (a service address resolves only where
cluster DNS does). What the engine always sends and the request lacks is added: the
controller resource, an empty group per child (attachment, output) resource, finalizing (true
only for a parent with a deletionTimestamp) and related (empty groups for what an inline
customize hook selects); the parent alone is a request.

The hook libraries hooks load (lib:NAME/MODULE) are read from the --library files and the
-f files, scoped as the engine scopes them (docs/hook-libraries.md, "Offline").

Controller kinds and their hooks (* the one called when --hook is not given):
` + kindHooks(primary) + `
Exit status: 0 the hook answered; 1 the hook failed (compile, runtime, budget, output or
webhook error); 2 bad flags or input.

Flags:
`

// hookRun is `metascript hook run`.
func hookRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("hook run", hookRunUsage, stderr)
	files := addFileFlag(fs, "controller resource file, or a file of the ConfigMaps and Secrets it names or the CustomResourceDefinitions of its resources")
	var budgets hookBudgetFlags
	hook := fs.String("hook", "", "hook to call: "+hookNames()+" (default: the controller kind's hook marked * above)")
	reqFile := fs.String("request", "", "request file (YAML or JSON); - reads stdin")
	name := fs.String("controller", "", "controller name, when the files hold several; KIND/NAME (e.g. decoratorcontroller/NAME) when two kinds share it")
	nowFlag := fs.String("now", "", "fix the clock hooks read (RFC 3339), for repeatable output")
	compact := fs.Bool("compact", false, "print the response on one line")
	libraries := addLibraryFlag(fs)
	budgets.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected arguments %q", pos)
	case len(*files) == 0:
		return usageError(fs, "-f CONTROLLER.yaml is required")
	case *reqFile == "":
		return usageError(fs, "--request REQUEST.(json|yaml) is required")
	}
	now, err := parseNow(*nowFlag)
	if err != nil {
		return usageError(fs, "%v", err)
	}

	set, err := readControllerFiles(*files, *libraries)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	ctrl, err := set.Find(*name)
	if err != nil {
		return usageError(fs, "%s: %v", strings.Join(*files, ", "), err)
	}
	if *hook == "" {
		*hook = ctrl.Primary
	}
	if _, err := ctrl.Hook(*hook); err != nil {
		return usageError(fs, "%s: %v", ctrl.File, err)
	}
	req, err := readRequest(*reqFile)
	if err != nil {
		return usageError(fs, "--request %s: %v", *reqFile, err)
	}
	rt, err := offlineRuntime(now, budgets)
	if err != nil {
		return usageError(fs, "%v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	inv, err := buildHook(ctx, rt, objectsOf(set), ctrl, *hook)
	if err != nil {
		fmt.Fprintln(stderr, located(ctrl, "hooks."+*hook, err))
		return exitFailed
	}
	completer := &requestCompleter{rt: rt, set: set, ctrl: ctrl, log: hookLogger(stderr)}
	req, notes := completer.complete(ctx, *hook, req)
	fmt.Fprint(stderr, noteLines("hook run", notes))
	resp, err := inv.Invoke(ctx, req, hookLogger(stderr))
	if err != nil {
		fmt.Fprintln(stderr, located(ctrl, "hooks."+*hook, err))
		return exitFailed
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if !*compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(resp); err != nil {
		fmt.Fprintf(stderr, "metascript hook run: writing the response: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// readControllerFiles reads every file, and the hook libraries of the --library files
// libraryPaths; a file or document that cannot be read is an error, as are two libraries
// of one name in one scope.
func readControllerFiles(paths, libraryPaths []string) (*manifest.Set, error) {
	extra, err := readLibraryFiles(libraryPaths)
	if err != nil {
		return nil, err
	}
	var files []*manifest.File
	var errs []error
	for _, p := range paths {
		f, err := manifest.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, de := range f.Errors {
			errs = append(errs, de)
		}
		files = append(files, f)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	set := manifest.NewSet(files...)
	set.Libraries = append(set.Libraries, extra...)
	if err := checkLibraries(set.Libraries); err != nil {
		return nil, err
	}
	return set, nil
}

// readRequest reads a request object from a YAML or JSON file, or stdin for "-".
func readRequest(path string) (map[string]any, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	v, err := hooktest.DecodeValue(data)
	if err != nil {
		return nil, err
	}
	req, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected the request object, got %s", hooktest.Render(v))
	}
	return req, nil
}

// parseNow reads --now, an RFC 3339 time; empty means none.
func parseNow(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--now: want an RFC 3339 time such as 2025-01-02T03:04:05Z: %v", err)
	}
	return t, nil
}
