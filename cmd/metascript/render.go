package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/render"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

var renderUsage = `Usage: metascript render -f CONTROLLER.yaml --parent PARENT.yaml [--observed FILE...] [flags]

Shows what the engine would do for one parent, with no cluster: it builds the hook requests
with the engine's own code from the parent and the observed objects (children, related
objects, inputs), calls the hooks as the engine does (customize first when declared, then
sync or finalize; map for each input and tombstone for each detached map key), and prints
what the engine would create, update and delete and the parent's new status, as a YAML
document stream (docs/hook-testing.md, "Render"). The hooks' log lines and every problem go
to stderr.

--parent's file holds one object of the controller's parent resource; its other objects
are observed too. Resources are resolved from the built-in ones and the
CustomResourceDefinitions among the files.

The hook libraries hooks load (lib:NAME/MODULE) are read from the --library files and the
-f files, scoped as the engine scopes them (docs/hook-libraries.md, "Offline").

Controller kinds and their hooks (* the hook called for a parent that is not finalizing):
` + kindHooks(primary) + `
Exit status: 0 rendered; 1 a hook failed or answered invalidly, a child could not be
written, or --until-stable did not settle; 2 bad flags or input.

Flags:
`

// renderFlags are render's flags, parsed.
type renderFlags struct {
	files, observed  []string
	libraries        []string
	parent, hook     string
	controller       string
	diff, stable     bool
	maxRounds        int
	now              time.Time
	budgets          hookBudgetFlags
	hookGiven, fixed bool
}

// renderCommand is `metascript render`.
func renderCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("render", renderUsage, stderr)
	var f renderFlags
	files := addFileFlag(fs, "controller resource file, or a file of CRDs, ConfigMaps and Secrets it needs")
	var observed stringList
	fs.Var(&observed, "observed", "file of observed objects: children, related objects, inputs; repeatable")
	fs.StringVar(&f.parent, "parent", "", "file holding the parent object (its other objects are observed too)")
	fs.StringVar(&f.hook, "hook", "", "the hook to render: "+hookNames()+"; finalize renders the parent as being deleted (default: what the engine calls)")
	fs.StringVar(&f.controller, "controller", "", "controller name, when the files hold several; KIND/NAME when two kinds share it")
	fs.BoolVar(&f.diff, "diff", false, "print a unified diff against the observed objects instead")
	fs.BoolVar(&f.stable, "until-stable", false, "feed each result back as observed state until nothing changes")
	fs.IntVar(&f.maxRounds, "max-rounds", 10, "with --until-stable, the rounds after which the render is not stable")
	nowFlag := fs.String("now", "", "fix the clock hooks and conditions read (RFC 3339), for repeatable output")
	libraries := addLibraryFlag(fs)
	f.budgets.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected arguments %q", pos)
	case len(*files) == 0:
		return usageError(fs, "-f CONTROLLER.yaml is required")
	case f.parent == "":
		return usageError(fs, "--parent PARENT.yaml is required")
	case f.maxRounds < 1:
		return usageError(fs, "--max-rounds must be at least 1")
	}
	if f.now, err = parseNow(*nowFlag); err != nil {
		return usageError(fs, "%v", err)
	}
	f.fixed = !f.now.IsZero()
	if !f.fixed {
		f.now = time.Now()
	}
	f.files, f.observed, f.libraries, f.hookGiven = *files, observed, *libraries, f.hook != ""
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code, err := runRender(ctx, &f, stdout, stderr)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	return code
}

// offlineController is a controller built for render: its kind, what the engine's manager
// would build it from, and the state it is rendered over.
type offlineController struct {
	ctrl     *manifest.Controller
	built    *reconcile.Built
	calls    *callLog
	resolver *render.Resolver
	env      reconcile.Env
}

// runRender renders; an error is bad input (exit 2), everything else is reported on stderr
// and in the exit code.
func runRender(ctx context.Context, f *renderFlags, stdout, stderr io.Writer) (int, error) {
	set, err := readControllerFiles(f.files, f.libraries)
	if err != nil {
		return 0, err
	}
	ctrl, err := set.Find(f.controller)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", strings.Join(f.files, ", "), err)
	}
	if f.hook != "" {
		if _, err := ctrl.Hook(f.hook); err != nil {
			return 0, fmt.Errorf("%s: %v", ctrl.File, err)
		}
	}
	resolver := render.NewResolver()
	var objects []manifest.Object
	given := len(f.files)
	for n, path := range append(append(append([]string{}, f.files...), f.parent), f.observed...) {
		objs, err := manifest.ReadObjects(path)
		var pe *os.PathError
		if errors.As(err, &pe) {
			return 0, errors.New(unreadable(path, err))
		}
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			switch {
			case render.IsCRD(o.Object):
				if err := resolver.AddCRD(o.Object); err != nil {
					return 0, fmt.Errorf("%s: CustomResourceDefinition: %v", o.Where(), err)
				}
			case n >= given: // -f files serve the controller; the others are observed
				objects = append(objects, o)
			}
		}
	}
	oc, code, err := buildOffline(ctx, ctrl, set, resolver, f, stderr)
	if err != nil || code != exitOK {
		return code, err
	}
	runner, err := oc.configure()
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %v", ctrl.File, ctrl.Ref(), err)
	}
	parents := runner.Parents()
	state := render.NewState(resolver)
	var parent *unstructured.Unstructured
	res, parentNS := -1, ""
	for _, o := range objects {
		if o.File != f.parent {
			continue
		}
		u := unstructured.Unstructured{Object: o.Object}
		for i, p := range parents {
			if p.GVK.GroupKind() == u.GroupVersionKind().GroupKind() && p.APIVersion() == u.GetAPIVersion() {
				if parent != nil {
					return 0, fmt.Errorf("%s: several objects of the parent resource %s; give one", f.parent, p.GVR.Resource)
				}
				obj, _, err := state.Add(o, "default")
				if err != nil {
					return 0, err
				}
				parent, res, parentNS = obj, i, obj.GetNamespace()
			}
		}
	}
	if parent == nil {
		var names []string
		for _, p := range parents {
			names = append(names, p.GVK.Kind+" ("+p.APIVersion()+")")
		}
		return 0, fmt.Errorf("%s: no object of the parent resource of %s: %s", f.parent, ctrl.Ref(), strings.Join(names, " or "))
	}
	if parentNS == "" {
		parentNS = "default"
	}
	for _, o := range objects {
		if o.File == f.parent && o.Object["kind"] == parent.GetKind() && o.Object["apiVersion"] == parent.GetAPIVersion() {
			continue
		}
		if _, _, err := state.Add(o, parentNS); err != nil {
			return 0, err
		}
	}
	switch {
	case f.hook == "finalize" && parent.GetDeletionTimestamp() == nil:
		parent = parent.DeepCopy()
		parent.SetDeletionTimestamp(&metav1.Time{Time: f.now})
		state.Put(parents[res].Resource, parent)
	case f.hook == "sync" && parent.GetDeletionTimestamp() != nil:
		return 0, fmt.Errorf("%s: %s is being deleted: the engine calls finalize, not sync", f.parent, parents[res].Describe(parent))
	}
	return oc.run(ctx, f, state, parents[res].Resource, res, parent, stdout, stderr)
}

// buildOffline resolves the controller's resources and builds its hooks as the engine's
// manager does. A compile error is reported located and exits 1.
func buildOffline(ctx context.Context, ctrl *manifest.Controller, set *manifest.Set, resolver *render.Resolver, f *renderFlags,
	stderr io.Writer) (*offlineController, int, error) {
	resolved := make([]resources.Resource, len(ctrl.Declared.Resources))
	for i, ref := range ctrl.Declared.Resources {
		r, err := resolver.Resolve(ref.Rule.APIVersion, ref.Rule.Resource)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %s %s: %v", ctrl.File, ctrl.Ref(), ref.Field, err)
		}
		resolved[i] = r
	}
	var clock time.Time
	if f.fixed {
		clock = f.now
	}
	rt, err := offlineRuntime(clock, f.budgets)
	if err != nil {
		return nil, 0, err
	}
	calls := &callLog{}
	built := &reconcile.Built{Declared: ctrl.Declared, Descriptor: ctrl.Descriptor, Object: ctrl.Object, Resources: resolved,
		Hooks: map[string]hooks.Invoker{}}
	failed := false
	for _, h := range ctrl.Hooks() {
		inv, err := buildHook(ctx, rt, objectsOf(set), ctrl, h.Name)
		if err != nil {
			fmt.Fprintln(stderr, located(ctrl, "hooks."+h.Name, err))
			failed = true
			continue
		}
		built.Hooks[h.Name] = &loggedHook{name: h.Name, inv: inv, log: calls}
	}
	if failed {
		return nil, exitFailed, nil
	}
	now := f.now
	env := reconcile.Env{Metrics: metrics.New(), Recorder: &eventLog{}, Log: hookLogger(stderr), Resolver: resolver, Workers: 1, RevisionNamespace: reconcile.DefaultRevisionNamespace,
		Clock: func() time.Time { return now }}
	return &offlineController{ctrl: ctrl, built: built, calls: calls, resolver: resolver, env: env}, exitOK, nil
}

// configure makes a runner of the controller as the engine's manager does, never started:
// one per round, so that no round remembers another's calls (a MapController's memos), as
// after a restart of the engine.
func (oc *offlineController) configure() (*reconcile.Runner, error) {
	return oc.ctrl.Descriptor.Configure(oc.built, oc.env)
}

// run renders the parent once, or with --until-stable until a round changes nothing, and
// prints the result.
func (oc *offlineController) run(ctx context.Context, f *renderFlags, state *render.State, parentRes resources.Resource, res int,
	parent *unstructured.Unstructured, stdout, stderr io.Writer) (int, error) {
	result := &render.Result{ParentResource: parentRes, History: render.NewHistory()}
	after := state.Clone()
	code := exitOK
	rounds := 1
	if f.stable {
		rounds = f.maxRounds
	}
	var churn []string
	stable := false
	cur := parent
	for round := 1; round <= rounds; round++ {
		runner, err := oc.configure()
		if err == nil {
			err = runner.Observe(after.Objects)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %v", oc.ctrl.File, oc.ctrl.Ref(), err)
		}
		oc.calls.reset()
		rendering, err := runner.Render(ctx, res, cur)
		if err != nil {
			return oc.reportFailure(err, stderr), nil
		}
		if round == 1 {
			// The parent as the engine takes it (holding the finalizer of a finalize hook
			// when it is being deleted) is what the render's changes are measured from.
			result.Parent0 = rendering.Seen
			after.Put(parentRes, rendering.Seen)
			result.Before = after.Clone()
		}
		if round == 1 && !rendering.Acts {
			fmt.Fprintf(stderr, "%s: %s: %s\n", f.parent, parentRes.Describe(parent), rendering.Skipped)
		}
		if f.hookGiven && f.hook != "finalize" && !oc.calls.called(f.hook) && round == 1 {
			return 0, fmt.Errorf("%s: the engine calls no %s hook for %s with these observed objects%s", f.parent, f.hook,
				parentRes.Describe(parent), whyNot(f.hook))
		}
		if oc.report(rendering, stderr) {
			code = exitFailed
		}
		result.History.Record(rendering)
		result.Last = rendering
		churn = render.Churn(rendering, parentRes.Describe(cur), rendering.Seen)
		cur = after.Apply(parentRes, rendering)
		if len(churn) == 0 || cur == nil {
			stable = true
			break
		}
		if code != exitOK {
			break // the engine would retry; what stands is shown
		}
	}
	result.After, result.Parent = after, cur
	changes := render.Changes(result)
	var err error
	if f.diff {
		err = render.WriteDiff(stdout, changes)
	} else {
		err = render.Write(stdout, fmt.Sprintf("metascript render: %s, %s", oc.ctrl.Ref(), parentRes.Describe(parent)), changes)
	}
	if err != nil {
		fmt.Fprintf(stderr, "metascript render: writing the result: %v\n", err)
		return exitFailed, nil
	}
	if result.Last.Prepared {
		fmt.Fprintln(stderr, "note: the engine also writes the parent's ControllerRevisions (rolling updates); a render does not show them")
	}
	if f.stable && code == exitOK && !stable {
		fmt.Fprintf(stderr, "not stable after %d rounds; the last round still changed:\n", f.maxRounds)
		for _, line := range churn {
			fmt.Fprintln(stderr, "  "+line)
		}
		return exitFailed, nil
	}
	return code, nil
}

// whyNot says, for a hook the engine did not call, what makes it call it.
func whyNot(hook string) string {
	switch hook {
	case "tombstone":
		return " (it is called for outputs whose input is not observed)"
	case "map":
		return " (it is called for each input the parent's selector matches)"
	case "customize", "sync":
		return " (the controller does not select the parent)"
	}
	return ""
}

// report writes what the rendering could not do to stderr, located, and reports whether
// anything failed: hook calls that failed alone (a MapController's), invalid answers,
// children that cannot be written. Warnings (a child's name held by another object) are
// written too but are no failure.
func (oc *offlineController) report(r *reconcile.Rendering, stderr io.Writer) bool {
	failed := false
	for _, c := range oc.calls.failures() {
		fmt.Fprintln(stderr, oc.locate(c.hook, c.about, c.err))
		failed = true
	}
	for _, rej := range r.Rejected {
		fmt.Fprintln(stderr, oc.locate(rej.Hook, rej.About, rej.Err))
		failed = true
	}
	for _, w := range r.Children {
		if w.Err != nil {
			fmt.Fprintf(stderr, "%s: %s: %s cannot be written: %v\n", oc.ctrl.File, oc.ctrl.Ref(), w.Rule.Describe(w.Object), w.Err)
			failed = true
		}
	}
	for _, e := range oc.env.Recorder.(*eventLog).take() {
		if e.reason != "HookFailed" && e.reason != "HookBudgetExceeded" && e.reason != "InvalidHookResponse" {
			fmt.Fprintf(stderr, "warning: %s: %s\n", e.reason, e.message)
		}
	}
	return failed
}

// reportFailure writes the failure that stopped a render, located, and returns the exit
// code: a hook's failure, or a parent the engine cannot reconcile (its selector is invalid).
func (oc *offlineController) reportFailure(err error, stderr io.Writer) int {
	oc.env.Recorder.(*eventLog).take()
	if fails := oc.calls.failures(); len(fails) > 0 {
		for _, c := range fails {
			fmt.Fprintln(stderr, oc.locate(c.hook, c.about, c.err))
		}
		return exitFailed
	}
	var he *reconcile.HookError
	if errors.As(err, &he) {
		fmt.Fprintln(stderr, oc.locate(he.Hook, he.About, he.Err))
		return exitFailed
	}
	fmt.Fprintf(stderr, "metascript render: %s: %s: %v\n", oc.ctrl.File, oc.ctrl.Ref(), err)
	return exitUsage
}

// locate formats a hook's failure as `FILE: KIND/NAME hooks.HOOK[ for ABOUT]: DETAIL`.
func (oc *offlineController) locate(hook, about string, err error) string {
	part := "hooks." + hook
	if about != "" {
		part += " for " + about
	}
	return located(oc.ctrl, part, err)
}
