package manifest

import (
	"fmt"
	"slices"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/engine/reconcile"
)

// Controller is one controller resource read from a file. What the offline commands use of
// it (kind, name, shared script, hooks) is the same for every kind, and comes from the kind's
// descriptor (engine/kinds), so that they handle every kind through one code path.
type Controller struct {
	// File is the path as given; Line is the first line of the controller's document.
	File string
	Line int
	// Object is the resource as written, in JSON shape; the engine hands the controller to
	// its hooks as request.controller in this shape.
	Object map[string]any
	// Kind is the resource's kind, one of Kinds; Descriptor is that kind.
	Kind       string
	Descriptor *reconcile.Descriptor
	Name       string
	// Script is spec.script, the helper code the hooks share; nil when there is none.
	Script *v1alpha1.SharedScript
	// EndpointConfigs is spec.endpointConfigs, the connection settings of webhooks by host.
	EndpointConfigs []v1alpha1.EndpointConfig
	// Primary is the kind's primary hook (sync, or map for a MapController): the one commands
	// call when told no hook.
	Primary string
	// Typed is the decoded resource: *v1alpha1.CompositeController, ... by kind.
	Typed any
	// Declared is what the resource declares, as the engine reads it.
	Declared *reconcile.Declared

	// hooks are the defined hooks, in the order the engine builds them.
	hooks []NamedHook
}

// Ref names the controller as the engine does in positions and logs: KIND/NAME with the
// kind in lower case, e.g. compositecontroller/NAME.
func (c *Controller) Ref() string { return c.Descriptor.Ref(c.Name) }

// NamedHook is one hook of a controller.
type NamedHook struct {
	Name string
	Def  *v1alpha1.Hook
	// Response are the top-level fields the engine accepts in the hook's response.
	Response []string
}

// Hooks lists the hooks the controller defines, in the order the engine builds them (that
// of the kind's descriptor).
func (c *Controller) Hooks() []NamedHook { return c.hooks }

// Hook returns the hook called name, or an error listing the ones defined.
func (c *Controller) Hook(name string) (NamedHook, error) {
	var names []string
	for _, h := range c.hooks {
		if h.Name == name {
			return h, nil
		}
		names = append(names, h.Name)
	}
	if len(names) == 0 {
		return NamedHook{}, fmt.Errorf("%s defines no hooks", c.Ref())
	}
	return NamedHook{}, fmt.Errorf("%s has no hooks.%s (defined: %s)", c.Ref(), name, strings.Join(names, ", "))
}

// Kinds are the kinds of controller resource the offline commands read.
var Kinds = kinds.Names()

// HookNames are the hooks of the given kinds (of Kinds), each once, in the order of the kinds
// and, within a kind, the order the engine builds them.
func HookNames(kindNames []string) []string {
	var out []string
	for _, k := range kindNames {
		for _, h := range kinds.Lookup(k).Hooks {
			if !slices.Contains(out, h.Name) {
				out = append(out, h.Name)
			}
		}
	}
	return out
}

// decode decodes obj strictly as a controller resource of kind and describes it; File, Line
// and Object are left to the caller.
func decode(kind *reconcile.Descriptor, obj map[string]any) (*Controller, error) {
	decl, err := admission.Read(kind, obj)
	if err != nil {
		return nil, err
	}
	c := &Controller{Kind: kind.Kind, Descriptor: kind, Name: decl.Name, Script: decl.Script,
		EndpointConfigs: decl.EndpointConfigs, Primary: kind.Primary().Name, Typed: decl.Typed, Declared: decl}
	for _, h := range kind.Hooks {
		if def := decl.Hooks[h.Name]; def != nil {
			c.hooks = append(c.hooks, NamedHook{Name: h.Name, Def: def, Response: h.Response})
		}
	}
	return c, nil
}
