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
	// CC is the resource when Kind is CompositeController, DC when it is DecoratorController;
	// the other is nil.
	CC *v1alpha1.CompositeController
	DC *v1alpha1.DecoratorController

	// hooks are the defined hooks, in HookNames order.
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

// HookNames are the hooks a controller may define, in the order the engine builds them and
// the commands report them.
var HookNames = []string{"sync", "finalize", "customize"}

// Hooks lists the hooks the controller defines, in HookNames order.
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

// definedHooks pairs the hooks of a spec (sync, finalize, customize, as HookNames) with their
// names, leaving out the undefined ones.
func definedHooks(defs ...*v1alpha1.Hook) []NamedHook {
	var out []NamedHook
	for i, def := range defs {
		if def != nil {
			out = append(out, NamedHook{HookNames[i], def})
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
	c := &Controller{Name: cc.Name, Script: cc.Spec.Script, CC: cc}
	if h := cc.Spec.Hooks; h != nil {
		c.hooks = definedHooks(h.Sync, h.Finalize, h.Customize)
	}
	return c, nil
}

func decodeDecorator(obj map[string]any) (*Controller, error) {
	dc := &v1alpha1.DecoratorController{}
	if err := decodeStrict(obj, dc); err != nil {
		return nil, err
	}
	c := &Controller{Name: dc.Name, Script: dc.Spec.Script, DC: dc}
	if h := dc.Spec.Hooks; h != nil {
		c.hooks = definedHooks(h.Sync, h.Finalize, h.Customize)
	}
	return c, nil
}
