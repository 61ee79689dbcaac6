package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"

	"metascript.dev/metascript/cmd/metascript/internal/hooktest"
	"metascript.dev/metascript/engine/hooks"
)

var hookTestUsage = `Usage: metascript hook test [flags] FILE...

Runs the hook test cases of each test FILE (the format is in docs/hook-testing.md): builds the
hooks of the controller the file names as the engine does, calls them with each case's
request and checks the response. Prints PASS or FAIL per case, under a failing case what
differs and the hook's log lines, and finally "N passed, N failed".

The hook libraries hooks load (lib:NAME/MODULE) are read from the --library files and the
controller files, scoped as the engine scopes them (docs/hook-libraries.md, "Offline").

Controller kinds and their hooks (* the one a case calls when neither it nor its file
names a hook):
` + kindHooks(primary) + `
Exit status: 0 every case passed; 1 a case failed or a test file could not be used; 2 bad
flags or no files.

Flags:
`

// maxFailureLines bounds what is printed under one failing case.
const maxFailureLines = 40

type hookTestOptions struct {
	run       *regexp.Regexp
	verbose   bool
	libraries []string
	budgets   hookBudgetFlags
}

// hookTest is `metascript hook test`.
func hookTest(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("hook test", hookTestUsage, stderr)
	var o hookTestOptions
	run := fs.String("run", "", "run only the cases whose name matches this regular expression")
	fs.BoolVar(&o.verbose, "v", false, "print the hook's log lines for passing cases too")
	libraries := addLibraryFlag(fs)
	o.budgets.register(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(files) == 0 {
		return usageError(fs, "no test files")
	}
	o.libraries = *libraries
	if _, err := readLibraryFiles(o.libraries); err != nil {
		return usageError(fs, "%v", err)
	}
	if *run != "" {
		if o.run, err = regexp.Compile(*run); err != nil {
			return usageError(fs, "--run: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	passed, failed := 0, 0
	for _, f := range files {
		p, n := runSuite(ctx, f, &o, stdout)
		passed, failed = passed+p, failed+n
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}

// runSuite runs the selected cases of one test file. A file that cannot be used counts as
// one failure per selected case (at least one).
func runSuite(ctx context.Context, path string, o *hookTestOptions, out io.Writer) (passed, failed int) {
	s, err := hooktest.Load(path)
	fileFailed := func(err error) (int, int) {
		n := 0
		if s != nil {
			for i := range s.Cases {
				if o.selects(&s.Cases[i]) {
					n++
				}
			}
		}
		fmt.Fprintf(out, "FAIL %s\n", path)
		writeIndented(out, []string{err.Error()})
		return 0, max(n, 1)
	}
	if err != nil {
		return fileFailed(err)
	}
	set, err := readControllerFiles([]string{s.ControllerPath()}, o.libraries)
	if err != nil {
		return fileFailed(fmt.Errorf("controller: %v", err))
	}
	ctrl, err := set.Find(s.ControllerName)
	if err != nil {
		return fileFailed(fmt.Errorf("controller %s: %v", s.ControllerPath(), err))
	}
	rt, err := offlineRuntime(s.NowTime, o.budgets)
	if err != nil {
		return fileFailed(err)
	}
	type built struct {
		inv hooks.Invoker
		err error
	}
	invokers := map[string]built{}
	for i := range s.Cases {
		c := &s.Cases[i]
		if !o.selects(c) {
			continue
		}
		if c.Hook == "" {
			c.Hook = ctrl.Primary // neither the case nor the file names one
		}
		b, ok := invokers[c.Hook]
		if !ok {
			b.inv, b.err = buildHook(ctx, rt, objectsOf(set), ctrl, c.Hook)
			invokers[c.Hook] = b
		}
		var resp map[string]any
		var log bytes.Buffer
		err := b.err
		if err == nil {
			// Completed as hook run completes it: a case's request need not repeat what the
			// engine always sends.
			completer := &requestCompleter{rt: rt, set: set, ctrl: ctrl, log: hookLogger(&log)}
			req, notes := completer.complete(ctx, c.Hook, c.NewRequest())
			log.WriteString(noteLines("hook test", notes))
			resp, err = b.inv.Invoke(ctx, req, hookLogger(&log))
		}
		if err != nil {
			err = describedError{err}
		}
		fails := c.Check(resp, err)
		if len(fails) == 0 {
			passed++
			fmt.Fprintf(out, "PASS %s: %s\n", path, c.Name)
			if o.verbose {
				writeLog(out, &log)
			}
			continue
		}
		failed++
		fmt.Fprintf(out, "FAIL %s: %s\n", path, c.Name)
		writeIndented(out, fails)
		writeLog(out, &log)
	}
	return passed, failed
}

func (o *hookTestOptions) selects(c *hooktest.Case) bool {
	return o.run == nil || o.run.MatchString(c.Name)
}

// describedError is a hook error whose message carries what describe adds (the stack of a
// budget error), so that `error:` expectations and reports see it.
type describedError struct{ err error }

func (e describedError) Error() string { return describe(e.err) }
func (e describedError) Unwrap() error { return e.err }

// writeIndented writes lines under a case, continuation lines of multi-line messages
// included, stopping after maxFailureLines.
func writeIndented(out io.Writer, lines []string) {
	n := 0
	for i, l := range lines {
		for _, part := range strings.Split(l, "\n") {
			if n == maxFailureLines {
				fmt.Fprintf(out, "    ... and %d more differences\n", len(lines)-i)
				return
			}
			fmt.Fprintf(out, "    %s\n", part)
			n++
		}
	}
}

func writeLog(out io.Writer, log *bytes.Buffer) {
	if log.Len() == 0 {
		return
	}
	fmt.Fprintln(out, "    hook log:")
	for _, l := range strings.Split(strings.TrimRight(log.String(), "\n"), "\n") {
		fmt.Fprintf(out, "      %s\n", l)
	}
}
