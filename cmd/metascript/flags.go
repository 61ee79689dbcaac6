package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"metascript.dev/metascript/scripting"
)

// newFlagSet is the flag set of a command: it writes to stderr, and -h prints usage, then
// the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before, between or after positional
// arguments, and returns the positional ones; "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag.Parse stops at the first positional argument, or after a "--" it consumed.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// flagExit is the exit code after a flag parse error: -h asked for help, anything else is
// a usage error (the flag package has printed it).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// usageError writes a message of the command to its flag set's output (stderr), prefixed
// "metascript NAME: ", and returns exitUsage.
func usageError(fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(fs.Output(), "metascript "+fs.Name()+": "+format+"\n", a...)
	return exitUsage
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// addFileFlag registers -f, the files a command reads; what says which.
func addFileFlag(fs *flag.FlagSet, what string) *stringList {
	var files stringList
	fs.Var(&files, "f", what+"; YAML or JSON, several documents allowed; repeatable")
	return &files
}

// addLibraryFlag registers --library, the files of the hook libraries that hooks load.
func addLibraryFlag(fs *flag.FlagSet) *stringList {
	var files stringList
	fs.Var(&files, "library", "file of HookLibrary / NamespacedHookLibrary documents the hooks load (lib:NAME/MODULE), scoped as the engine scopes them; libraries in -f files count too; repeatable")
	return &files
}

// hookBudgetFlags are the hook budget flags: the budget a hook gets when its controller asks
// for none, and the most a controller may ask for. The offline commands share them with
// `run` so that a hook runs offline under the budget it gets in the engine.
type hookBudgetFlags struct{ defaults, ceilings budgetFlags }

// budgetFlags are the limits of one scripting.Budget.
type budgetFlags struct {
	timeout    time.Duration
	steps      uint64
	stackDepth int
	memory     string // a Kubernetes quantity (64Mi)
	// webhookTimeout is, among the ceilings, the longest timeout of a webhook hook.
	webhookTimeout time.Duration
}

func (f *hookBudgetFlags) register(fs *flag.FlagSet) {
	d := &f.defaults
	fs.DurationVar(&d.timeout, "hook-timeout", 2*time.Second, "default wall-clock budget of one hook invocation")
	fs.Uint64Var(&d.steps, "hook-max-steps", 10_000_000, "default Starlark step budget")
	fs.IntVar(&d.stackDepth, "hook-max-stack-depth", 200, "default call-stack depth budget")
	fs.StringVar(&d.memory, "hook-max-memory", "64Mi", "default memory budget of one invocation")
	f.ceilings.registerCeilings(fs)
}

// registerCeilings registers the --ceiling-hook-* flags alone: `metascript admission`
// refuses what `run` would cap, so both take the same flags with the same defaults.
func (c *budgetFlags) registerCeilings(fs *flag.FlagSet) {
	fs.DurationVar(&c.timeout, "ceiling-hook-timeout", 30*time.Second, "largest wall-clock budget a controller may ask for")
	fs.Uint64Var(&c.steps, "ceiling-hook-max-steps", 1_000_000_000, "largest Starlark step budget a controller may ask for")
	fs.IntVar(&c.stackDepth, "ceiling-hook-max-stack-depth", 1000, "largest call-stack depth a controller may ask for")
	fs.StringVar(&c.memory, "ceiling-hook-max-memory", "512Mi", "largest memory budget a controller may ask for")
	fs.DurationVar(&c.webhookTimeout, "ceiling-webhook-timeout", 30*time.Second, "longest timeout a controller may give a webhook hook; 0 for no ceiling")
}

// parse returns the flags as the scripting runtime takes them; the error names the flag at
// fault.
func (f *hookBudgetFlags) parse() (defaults, ceilings scripting.Budget, err error) {
	if defaults, err = f.defaults.budget(); err != nil {
		return defaults, ceilings, fmt.Errorf("--hook-max-memory: %w", err)
	}
	if ceilings, err = f.ceilings.budget(); err != nil {
		return defaults, ceilings, fmt.Errorf("--ceiling-hook-max-memory: %w", err)
	}
	return defaults, ceilings, nil
}

func (b budgetFlags) budget() (scripting.Budget, error) {
	out := scripting.Budget{Timeout: b.timeout, MaxSteps: b.steps, MaxStackDepth: b.stackDepth}
	if b.memory != "" {
		q, err := resource.ParseQuantity(b.memory)
		if err != nil {
			return out, fmt.Errorf("memory %q: %w", b.memory, err)
		}
		out.MaxMemory = q.Value()
	}
	return out, nil
}

// quantityFlag is the value of flag name, a positive Kubernetes quantity such as 16Mi.
func quantityFlag(name, value string) (int64, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: %w", name, value, err)
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("--%s %q: must be positive", name, value)
	}
	return q.Value(), nil
}
