package manager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/engine/decorator"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/mapping"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// controllerKind is what the manager knows of one kind of controller resource: where its
// objects are served and how one becomes a runner.
type controllerKind struct {
	// name is the kind in lower case, as in logs and compile positions.
	name     string
	resource schema.GroupVersionResource
	build    func(ctx context.Context, m *Manager, u *unstructured.Unstructured) (*built, error)
}

// built is a controller ready to start.
type built struct {
	runner *reconcile.Runner
	// watched are the resources the runner's informers watch.
	watched []schema.GroupVersionResource
	// capped says which hook budgets the engine's ceilings cut down.
	capped []string
}

// buildError is why a controller cannot run, as its status reports it.
type buildError struct {
	// reason is the condition reason: InvalidSpec, CompileError, ResourceNotFound, and for
	// webhook settings ReferenceNotFound or InvalidWebhookConfig.
	reason string
	err    error
	hooks  bool // the hooks are at fault: HooksCompiled=False
	retry  bool // may mend itself: a resource not served yet, a Secret not created yet
}

func (e *buildError) Error() string { return e.err.Error() }

func controllerKinds() []controllerKind {
	return []controllerKind{
		{name: "compositecontroller", resource: v1alpha1.CompositeControllerResource, build: buildComposite},
		{name: "decoratorcontroller", resource: v1alpha1.DecoratorControllerResource, build: buildDecorator},
		{name: "mapcontroller", resource: v1alpha1.MapControllerResource, build: buildMap},
	}
}

func buildComposite(ctx context.Context, m *Manager, u *unstructured.Unstructured) (*built, error) {
	var cc v1alpha1.CompositeController
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cc); err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err, hooks: true}
	}
	h := cc.Spec.Hooks
	if h == nil || h.Sync == nil {
		return nil, &buildError{reason: "InvalidSpec", err: errors.New("spec.hooks.sync is required")}
	}
	ref := "compositecontroller/" + cc.Name
	invokers, capped, err := m.compile(ctx, ref, cc.Spec.Script, cc.Spec.EndpointConfigs, []namedHook{
		{"sync", h.Sync, composite.ResponseFields}, {"finalize", h.Finalize, composite.ResponseFields},
		{"customize", h.Customize, reconcile.CustomizeResponseFields}})
	if err != nil {
		return nil, err
	}
	parent, err := m.resolve("spec.parentResource", cc.Spec.ParentResource.ResourceRule)
	if err != nil {
		return nil, err
	}
	b := &built{capped: capped, watched: []schema.GroupVersionResource{parent.GVR}}
	var children []resources.Resource
	for i, c := range cc.Spec.ChildResources {
		res, err := m.resolve(fmt.Sprintf("spec.childResources[%d]", i), c.ResourceRule)
		if err != nil {
			return nil, err
		}
		children = append(children, res)
		b.watched = append(b.watched, res.GVR)
	}
	spec := composite.Spec{Controller: &cc, ControllerObject: u.Object, Parent: parent, Children: children, Hooks: invokers}
	for _, c := range cc.Spec.ChildResources {
		if us := c.UpdateStrategy; us != nil &&
			(us.Method == v1alpha1.ChildUpdateRollingInPlace || us.Method == v1alpha1.ChildUpdateRollingRecreate) {
			revs, err := m.resolve("controllerrevisions.metascript.dev (for rolling updates)", v1alpha1.ResourceRule{
				APIVersion: v1alpha1.GroupVersion.String(), Resource: v1alpha1.ControllerRevisionResource.Resource})
			if err != nil {
				return nil, err
			}
			spec.Revisions = &revs
			b.watched = append(b.watched, revs.GVR)
			break
		}
	}
	b.runner, err = composite.New(spec, m.env())
	if err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err}
	}
	return b, nil
}

func buildDecorator(ctx context.Context, m *Manager, u *unstructured.Unstructured) (*built, error) {
	var dc v1alpha1.DecoratorController
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dc); err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err, hooks: true}
	}
	h := dc.Spec.Hooks
	if h == nil || h.Sync == nil {
		return nil, &buildError{reason: "InvalidSpec", err: errors.New("spec.hooks.sync is required")}
	}
	ref := "decoratorcontroller/" + dc.Name
	invokers, capped, err := m.compile(ctx, ref, dc.Spec.Script, dc.Spec.EndpointConfigs, []namedHook{
		{"sync", h.Sync, decorator.ResponseFields}, {"finalize", h.Finalize, decorator.ResponseFields},
		{"customize", h.Customize, reconcile.CustomizeResponseFields}})
	if err != nil {
		return nil, err
	}
	b := &built{capped: capped}
	spec := decorator.Spec{Controller: &dc, ControllerObject: u.Object, Hooks: invokers}
	for i, r := range dc.Spec.Resources {
		res, err := m.resolve(fmt.Sprintf("spec.resources[%d]", i), r.ResourceRule)
		if err != nil {
			return nil, err
		}
		spec.Targets = append(spec.Targets, res)
		b.watched = append(b.watched, res.GVR)
	}
	for i, a := range dc.Spec.Attachments {
		res, err := m.resolve(fmt.Sprintf("spec.attachments[%d]", i), a.ResourceRule)
		if err != nil {
			return nil, err
		}
		spec.Attachments = append(spec.Attachments, res)
		b.watched = append(b.watched, res.GVR)
	}
	b.runner, err = decorator.New(spec, m.env())
	if err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err}
	}
	return b, nil
}

func buildMap(ctx context.Context, m *Manager, u *unstructured.Unstructured) (*built, error) {
	var mc v1alpha1.MapController
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &mc); err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err, hooks: true}
	}
	h := mc.Spec.Hooks
	if h == nil || h.Map == nil {
		return nil, &buildError{reason: "InvalidSpec", err: errors.New("spec.hooks.map is required")}
	}
	ref := "mapcontroller/" + mc.Name
	invokers, capped, err := m.compile(ctx, ref, mc.Spec.Script, mc.Spec.EndpointConfigs, []namedHook{
		{"map", h.Map, mapping.ResponseFields}, {"tombstone", h.Tombstone, mapping.ResponseFields}})
	if err != nil {
		return nil, err
	}
	parent, err := m.resolve("spec.parentResource", mc.Spec.ParentResource.ResourceRule)
	if err != nil {
		return nil, err
	}
	b := &built{capped: capped, watched: []schema.GroupVersionResource{parent.GVR}}
	spec := mapping.Spec{Controller: &mc, ControllerObject: u.Object, Parent: parent, Hooks: invokers}
	for i, r := range mc.Spec.InputResources {
		res, err := m.resolve(fmt.Sprintf("spec.inputResources[%d]", i), r)
		if err != nil {
			return nil, err
		}
		spec.Inputs = append(spec.Inputs, res)
		b.watched = append(b.watched, res.GVR)
	}
	for i, o := range mc.Spec.OutputResources {
		res, err := m.resolve(fmt.Sprintf("spec.outputResources[%d]", i), o.ResourceRule)
		if err != nil {
			return nil, err
		}
		spec.Outputs = append(spec.Outputs, res)
		b.watched = append(b.watched, res.GVR)
	}
	b.runner, err = mapping.New(spec, m.env())
	if err != nil {
		return nil, &buildError{reason: "InvalidSpec", err: err}
	}
	return b, nil
}

// env is what every runner shares.
func (m *Manager) env() reconcile.Env {
	return reconcile.Env{Client: m.opts.Dynamic, Informers: m.opts.Informers, Recorder: m.opts.Recorder,
		Metrics: m.opts.Metrics, Log: m.opts.Log, Resolver: m.opts.Resolver, Workers: m.opts.Workers}
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

// namedHook is one hook of a controller's spec; def is nil when it is not defined.
type namedHook struct {
	name string
	def  *v1alpha1.Hook
	// responseFields are the top-level fields the kind accepts in the hook's response.
	responseFields []string
}

// compile builds every defined hook of a controller (ref names it: compositecontroller/NAME),
// in the order given, and lists the budgets its ceilings cut down. Errors of all hooks are
// reported together: as ReferenceNotFound when they are all webhook settings naming a
// missing Secret, ConfigMap or key, InvalidWebhookConfig when they are all unusable webhook
// settings, CompileError otherwise.
func (m *Manager) compile(ctx context.Context, ref string, shared *v1alpha1.SharedScript,
	endpoints []v1alpha1.EndpointConfig, defs []namedHook) (map[string]hooks.Invoker, []string, error) {
	invokers := map[string]hooks.Invoker{}
	var capped []string
	var joined []error
	for _, h := range defs {
		name, def := h.name, h.def
		if def == nil {
			continue
		}
		inv, err := hooks.Build(ctx, hooks.Spec{Controller: ref, Hook: name, Def: def, Shared: shared,
			ResponseFields: h.responseFields, EndpointConfigs: endpoints}, m.opts.Compiler, clusterObjects{m.opts.Kube})
		if err != nil {
			joined = append(joined, fmt.Errorf("hooks.%s: %w", name, err))
			continue
		}
		invokers[name] = inv
		for _, c := range hooks.Capped(def, m.opts.Ceilings) {
			capped = append(capped, "hooks."+name+"."+c)
		}
	}
	if len(joined) > 0 {
		return nil, nil, hookErrors(joined)
	}
	return invokers, capped, nil
}

// hookErrors is the buildError of the hooks that failed to build.
func hookErrors(errs []error) *buildError {
	reason := "ReferenceNotFound"
	for _, err := range errs {
		var ce *hooks.ConfigError
		switch {
		case !errors.As(err, &ce):
			return &buildError{reason: "CompileError", err: errors.Join(errs...), hooks: true}
		case !missingReference(err):
			reason = "InvalidWebhookConfig"
		}
	}
	// A missing object may be created later: retry, as for a resource not served yet.
	return &buildError{reason: reason, err: errors.Join(errs...), retry: reason == "ReferenceNotFound"}
}
