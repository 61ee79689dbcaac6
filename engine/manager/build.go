package manager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/fairshare"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
)

// built is a controller ready to start.
type built struct {
	runner *reconcile.Runner
	// account is the ServiceAccount the runner's writes impersonate, if any: closed after
	// the runner stops.
	account *identity.Account
	// capped says which hook budgets the engine's ceilings cut down.
	capped []string
	// declared, kind and compiler are what the runner was built from: a staged hook change
	// builds the previous hooks with them (rollout.go).
	declared *reconcile.Declared
	kind     *reconcile.Descriptor
	compiler hooks.Compiler
	// libs are the libraries the hooks may load, and record those they named.
	libs *scopedLibraries
	// checks are the objects (besides libraries) the configuration named that the account
	// was found to be allowed to get; none without an account (references.go).
	checks []referenceCheck
}

// referenceChecks are what the manager asks again about while b runs: checks and the
// libraries its hooks loaded.
func (b *built) referenceChecks() []referenceCheck {
	return append(append([]referenceCheck(nil), b.checks...), b.libs.libraryChecks()...)
}

// buildError is why a controller cannot run, as its status reports it.
type buildError struct {
	// reason is the condition reason: InvalidSpec, CompileError, ResourceNotFound, and for
	// webhook settings ReferenceNotFound or InvalidWebhookConfig.
	reason string
	err    error
	hooks  bool // the hooks are at fault: HooksCompiled=False
	retry  bool // may mend itself: a resource not served yet, a Secret not created yet
	// recheck, for ReferenceRefused, are the checks to ask about again: once every one is
	// allowed, the controller is built again (recheckReferences).
	recheck []referenceCheck
}

func (e *buildError) Error() string { return e.err.Error() }

// build reads a controller resource of kind, builds its hooks, resolves its resources and
// returns its runner, not started.
// libs are the libraries its hooks may load; they record the names the hooks use, even when
// the build fails.
func (m *Manager) build(ctx context.Context, kind *reconcile.Descriptor, u *unstructured.Unstructured, libs *scopedLibraries) (*built, error) {
	decl, err := kind.Read(func(into any) error { return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into) })
	if err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err, hooks: true}
	}
	for _, h := range kind.Hooks {
		if h.Required && decl.Hooks[h.Name] == nil {
			return nil, &buildError{reason: "InvalidSpec", err: fmt.Errorf("spec.hooks.%s is required", h.Name)}
		}
	}
	compiler, err := m.compilerFor(decl)
	if err != nil {
		return nil, err
	}
	sa, err := reconcile.ServiceAccount(kind, decl)
	if err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err}
	}
	if err := m.checkTenantAccount(kind, sa); err != nil {
		return nil, err
	}
	if sa != nil && m.opts.Identities == nil {
		return nil, &buildError{reason: "InvalidSpec",
			err: errors.New("spec.serviceAccount: this engine was started without a configuration it can impersonate with")}
	}
	objects, checks, err := m.tenantObjects(ctx, kind, decl, sa, libs)
	if err != nil {
		return nil, err
	}
	invokers, capped, err := m.compile(ctx, kind.Ref(decl.Key()), decl, kind.Hooks, compiler, libs, objects)
	if sa != nil {
		// A library the account may not get was not loaded: the refusal, not the compile
		// error it caused, is why the controller does not run.
		if rerr := m.checkReferences(ctx, libs.libraryChecks()); rerr != nil {
			var be *buildError
			if errors.As(rerr, &be) && be.recheck != nil {
				be.recheck = append(checks, be.recheck...)
			}
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	b := &built{capped: capped, declared: decl, kind: kind, compiler: compiler, libs: libs, checks: checks}
	env := m.env(fairshare.ControllerFlow(decl.Namespace, kind.Ref(decl.Key())))
	if sa != nil {
		account, err := m.opts.Identities.For(sa.Namespace, sa.Name)
		if err != nil {
			return nil, &buildError{reason: "InvalidSpec", err: fmt.Errorf("spec.serviceAccount: %w", err)}
		}
		// Events the engine records for the controller (refused reads and writes, failed
		// hooks) go with the engine's own account, so that a tenant whose rights were revoked
		// still sees them; those its hooks ask for go as the account.
		b.account, env.Client, env.HookEvents, env.Reads = account, account.Dynamic, account.Recorder, account
	}
	resolved := make([]resources.Resource, len(decl.Resources))
	for i, ref := range decl.Resources {
		if resolved[i], err = m.resolve(ref.Field, ref.Rule); err != nil {
			b.close()
			return nil, err
		}
	}
	b.runner, err = kind.Configure(&reconcile.Built{Declared: decl, Descriptor: kind, Object: u.Object, Resources: resolved,
		Hooks: invokers}, env)
	if err != nil {
		b.close()
		return nil, &buildError{reason: "InvalidSpec", err: err}
	}
	return b, nil
}

// tenantObjects is what a controller's hooks are built from: the objects its configuration
// names, each checked for its account sa, and the checks allowed. Without an account the
// engine reads with its own rights, and nothing is checked. With one, its library loads are
// checked as they happen (libs).
func (m *Manager) tenantObjects(ctx context.Context, kind *reconcile.Descriptor, decl *reconcile.Declared,
	sa *v1alpha1.ServiceAccountReference, libs *scopedLibraries) (clusterObjects, []referenceCheck, error) {
	objects := clusterObjects{kube: m.opts.Kube, namespace: decl.Namespace}
	if sa == nil {
		return objects, nil, nil
	}
	user := identity.User(sa.Namespace, sa.Name)
	libs.account = &libraryAccount{user: user, allowed: func(c referenceCheck) bool {
		return m.opts.Identities.Reviewer.Check(ctx, c.access) == nil
	}}
	checks := referenceChecks(kind, decl, user)
	if err := m.checkReferences(ctx, checks); err != nil {
		return objects, nil, err
	}
	objects.checked = checkedObjects(checks)
	return objects, checks, nil
}

// close releases what a built controller holds besides its runner.
func (b *built) close() {
	if b.account != nil {
		b.account.Close()
	}
}

// env is what every runner shares, with the Event recorder of the controller of flow f.
func (m *Manager) env(f fairshare.Flow) reconcile.Env {
	recorder := m.opts.Recorder
	if m.opts.Recorders != nil {
		recorder = m.opts.Recorders(f)
	}
	return reconcile.Env{Client: m.opts.Dynamic, EngineClient: m.opts.Dynamic, Informers: m.opts.Informers, Recorder: recorder,
		Metrics: m.opts.Metrics, Log: m.opts.Log, Resolver: m.opts.Resolver, Workers: m.opts.Workers,
		Seats: m.opts.Seats, HookCalls: m.opts.HookCalls, Cores: m.opts.Cores, Shard: m.shard(),
		Trace: m.opts.Trace, RevisionNamespace: m.opts.RevisionNamespace}
}

// shard is the reconcile gate of a sharding engine, nil otherwise (a nil *Member in a
// non-nil interface would not be nil).
func (m *Manager) shard() reconcile.Shard {
	if m.opts.Shard == nil {
		return nil
	}
	return m.opts.Shard
}

// resolve resolves one resource rule of a controller; field names it for the error.
func (m *Manager) resolve(field string, rule v1alpha1.ResourceRule) (resources.Resource, error) {
	res, err := m.opts.Resolver.Resolve(rule.APIVersion, rule.Resource)
	if err == nil {
		return res, nil
	}
	var nf *resources.NotFoundError
	if errors.As(err, &nf) {
		return res, &buildError{reason: "ResourceNotFound", err: fmt.Errorf("%s: %w", field, err), retry: true}
	}
	return res, &buildError{reason: "InvalidSpec", err: fmt.Errorf("%s: %w", field, err)}
}

// compile builds every hook of a kind that the controller defines (ref names it:
// compositecontroller/NAME), in the kind's order, and lists the budgets its ceilings cut down. Errors of all hooks are
// reported together: as ReferenceNotFound when they are all webhook settings naming a
// missing Secret, ConfigMap or key, InvalidWebhookConfig when they are all unusable webhook
// settings, CompileError otherwise.
func (m *Manager) compile(ctx context.Context, ref string, decl *reconcile.Declared, defs []reconcile.Hook, compiler hooks.Compiler,
	libs scripting.Libraries, objects clusterObjects) (map[string]hooks.Invoker, []string, error) {
	invokers := map[string]hooks.Invoker{}
	var capped []string
	var joined []error
	sources := &hooks.SourceMeter{Max: m.opts.MaxSourceBytes}
	for _, h := range defs {
		name, def := h.Name, decl.Hooks[h.Name]
		if def == nil {
			continue
		}
		hookLibs := libs
		if s, ok := libs.(*scopedLibraries); ok {
			hookLibs = s.forHook("spec.hooks." + name)
		}
		inv, err := hooks.Build(ctx, hooks.Spec{Controller: ref, Hook: name, Def: def, Shared: decl.Script,
			ResponseFields: h.Response, EndpointConfigs: decl.EndpointConfigs, Libraries: hookLibs,
			WebhookCeiling: m.opts.WebhookCeiling, Tenant: m.webhookPolicy(decl),
			MaxAnswer: m.opts.MaxAnswerBytes, AnswerMemory: m.opts.AnswerMemory, Sources: sources}, compiler, objects)
		if err != nil {
			joined = append(joined, fmt.Errorf("hooks.%s: %w", name, err))
			continue
		}
		invokers[name] = inv
		for _, c := range hooks.Capped(def, m.opts.Ceilings, m.opts.WebhookCeiling) {
			capped = append(capped, "hooks."+name+"."+c)
		}
	}
	if len(joined) > 0 {
		return nil, nil, hookErrors(joined)
	}
	return invokers, capped, nil
}

// compilerFor is what compiles a controller's inline hooks: the isolated tier for
// spec.isolation: Process, the engine's runtime otherwise. Webhook hooks use neither.
func (m *Manager) compilerFor(decl *reconcile.Declared) (hooks.Compiler, error) {
	if decl.Isolation != v1alpha1.IsolationProcess {
		return m.opts.Compiler, nil
	}
	if m.opts.Isolated == nil {
		return nil, &buildError{reason: "InvalidSpec",
			err: errors.New("spec.isolation: Process: this engine runs no isolated tier (metascript run --isolated-workers)")}
	}
	return m.opts.Isolated, nil
}

// hookErrors is the buildError of the hooks that failed to build.
func hookErrors(errs []error) *buildError {
	reason := "ReferenceNotFound"
	for _, err := range errs {
		var ce *hooks.ConfigError
		var large *hooks.SourceTooLargeError
		switch {
		case errors.As(err, &large):
			return &buildError{reason: "SourceTooLarge", err: errors.Join(errs...), hooks: true}
		case !errors.As(err, &ce):
			return &buildError{reason: "CompileError", err: errors.Join(errs...), hooks: true}
		case !missingReference(err):
			reason = "InvalidWebhookConfig"
		}
	}
	// A missing object may be created later: retry, as for a resource not served yet.
	return &buildError{reason: reason, err: errors.Join(errs...), retry: reason == "ReferenceNotFound"}
}
