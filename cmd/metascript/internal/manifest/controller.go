package manifest

import (
	"fmt"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Controller is one controller resource read from a file. What the offline commands use of
// it (kind, name, shared script, hooks) is the same for every kind, so that they handle
// every kind through one code path; the typed resource is kept for what only one kind has.
type Controller struct {
	// File is the path as given; Line is the first line of the controller's document.
	File string
	Line int
	// Object is the resource as written, in JSON shape; the engine hands the controller to
	// its hooks as request.controller in this shape.
	Object map[string]any
	// Kind is the resource's kind, one of Kinds.
	Kind string
	Name string
	// Script is spec.script, the helper code the hooks share; nil when there is none.
	Script *v1alpha1.SharedScript
	// EndpointConfigs is spec.endpointConfigs, the connection settings of webhooks by host.
	EndpointConfigs []v1alpha1.EndpointConfig
	// Primary is the hook every controller of its kind must define: sync, or map for a
	// MapController. Commands call it when told no hook.
	Primary string
	// CC, DC or MC is the resource, by kind; the others are nil.
	CC *v1alpha1.CompositeController
	DC *v1alpha1.DecoratorController
	MC *v1alpha1.MapController

	// hooks are the defined hooks, in the order the engine builds them.
	hooks []NamedHook
}

// Ref names the controller as the engine does in positions and logs: KIND/NAME with the
// kind in lower case, e.g. compositecontroller/NAME.
func (c *Controller) Ref() string { return ref(c.Kind, c.Name) }

func ref(kind, name string) string { return strings.ToLower(kind) + "/" + name }

// NamedHook is one hook of a controller.
type NamedHook struct {
	Name string
	Def  *v1alpha1.Hook
}

// Hooks lists the hooks the controller defines, in the order the engine builds them (sync,
// finalize, customize; map, tombstone).
func (c *Controller) Hooks() []NamedHook { return c.hooks }

// Hook returns the hook called name, or an error listing the ones defined.
func (c *Controller) Hook(name string) (*v1alpha1.Hook, error) {
	var names []string
	for _, h := range c.hooks {
		if h.Name == name {
			return h.Def, nil
		}
		names = append(names, h.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s defines no hooks", c.Ref())
	}
	return nil, fmt.Errorf("%s has no hooks.%s (defined: %s)", c.Ref(), name, strings.Join(names, ", "))
}

// definedHooks leaves out the hooks a spec does not define.
func definedHooks(hooks ...NamedHook) []NamedHook {
	var out []NamedHook
	for _, h := range hooks {
		if h.Def != nil {
			out = append(out, h)
		}
	}
	return out
}

// controllerKind is what reading a controller resource of one kind takes.
type controllerKind struct {
	kind string
	// decode decodes obj strictly into the kind's typed resource and describes it; Kind, File,
	// Line and Object are left to the caller.
	decode func(obj map[string]any) (*Controller, error)
}

// controllerKinds are the kinds of controller resource read, in the order of Kinds.
var controllerKinds = []controllerKind{
	{"CompositeController", decodeComposite},
	{"DecoratorController", decodeDecorator},
	{"MapController", decodeMap},
}

// Kinds are the kinds of controller resource the offline commands read.
var Kinds = func() []string {
	var out []string
	for _, k := range controllerKinds {
		out = append(out, k.kind)
	}
	return out
}()

func lookupKind(kind string) *controllerKind {
	for i := range controllerKinds {
		if controllerKinds[i].kind == kind {
			return &controllerKinds[i]
		}
	}
	return nil
}

func decodeComposite(obj map[string]any) (*Controller, error) {
	cc := &v1alpha1.CompositeController{}
	if err := decodeStrict(obj, cc); err != nil {
		return nil, err
	}
	c := &Controller{Name: cc.Name, Script: cc.Spec.Script, EndpointConfigs: cc.Spec.EndpointConfigs, Primary: "sync", CC: cc}
	if h := cc.Spec.Hooks; h != nil {
		c.hooks = definedHooks(NamedHook{"sync", h.Sync}, NamedHook{"finalize", h.Finalize}, NamedHook{"customize", h.Customize})
	}
	return c, nil
}

func decodeDecorator(obj map[string]any) (*Controller, error) {
	dc := &v1alpha1.DecoratorController{}
	if err := decodeStrict(obj, dc); err != nil {
		return nil, err
	}
	c := &Controller{Name: dc.Name, Script: dc.Spec.Script, EndpointConfigs: dc.Spec.EndpointConfigs, Primary: "sync", DC: dc}
	if h := dc.Spec.Hooks; h != nil {
		c.hooks = definedHooks(NamedHook{"sync", h.Sync}, NamedHook{"finalize", h.Finalize}, NamedHook{"customize", h.Customize})
	}
	return c, nil
}

func decodeMap(obj map[string]any) (*Controller, error) {
	mc := &v1alpha1.MapController{}
	if err := decodeStrict(obj, mc); err != nil {
		return nil, err
	}
	c := &Controller{Name: mc.Name, Script: mc.Spec.Script, EndpointConfigs: mc.Spec.EndpointConfigs, Primary: "map", MC: mc}
	if h := mc.Spec.Hooks; h != nil {
		c.hooks = definedHooks(NamedHook{"map", h.Map}, NamedHook{"tombstone", h.Tombstone})
	}
	return c, nil
}
