package reconcile

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/related"
	"metascript.dev/metascript/engine/resources"
)

// Descriptor is one controller kind, told once. Each front door (engine/composite,
// engine/decorator, engine/mapping) exports one; the manager builds controllers from it and
// the offline commands read hooks, request and response fields from it, so that no other
// file restates what a kind is. A Descriptor is immutable and safe for concurrent use.
type Descriptor struct {
	// Kind is the kind of the controller resource (CompositeController).
	Kind string
	// Resource is where controller resources of the kind are served.
	Resource schema.GroupVersionResource
	// Hooks are the kind's hooks in the order they are built; exactly one is Primary.
	Hooks []Hook
	// FinalizerPrefix + the controller's name is the finalizer held on parents while a
	// finalize hook exists.
	FinalizerPrefix string
	// FieldManagerPrefix + the controller's name is the field manager of its writes, under
	// the engine's own prefix (apply.FieldManager).
	FieldManagerPrefix string
	// Namespaced kinds are confined to their own namespace (Declared.Namespace): see
	// Descriptor.NamespacedTwin.
	Namespaced bool
	// FinalizeDeselected finalizes a parent that stops being selected while it holds the
	// finalizer, as it is when deleted (DecoratorController). Otherwise such a parent is left
	// alone.
	FinalizeDeselected bool
	// Read decodes one controller resource with decode (into a pointer to the kind's type:
	// strictly for the offline commands, by the API server's converter in the engine) and
	// says what it declares. Its error is the decoder's.
	Read func(decode func(into any) error) (*Declared, error)
	// Configure validates a declared controller whose resources are resolved and whose hooks
	// are built, and returns its Runner, not started. Its error names the field at fault.
	Configure func(b *Built, env Env) (*Runner, error)
	// ParentField is the request field holding the parent: "parent" when empty, "object" for
	// a DecoratorController's target.
	ParentField string
	// Request builds the request of hook d.Hook (any but customize: see HookRequest) for
	// d.Parent from what d gathered (Observed, Related, Finalizing), as the kind's Ask sends
	// it, for a controller b whose Resources are resolved; b needs no Hooks. A MapController's
	// request lacks the mapKey and input that name one input. The offline commands call it
	// with nothing observed to complete a request written by hand.
	Request func(b *Built, d *Gathered) map[string]any
}

// RequestParent is the request field holding the parent (Descriptor.ParentField).
func (d *Descriptor) RequestParent() string {
	if d.ParentField == "" {
		return "parent"
	}
	return d.ParentField
}

// HookRequest is the request of hook d.Hook of controller b for d.Parent, as the engine
// builds it from what d gathered: the customize hook's (CustomizeRequest) or the kind's
// (Descriptor.Request).
func HookRequest(b *Built, d *Gathered) map[string]any {
	if d.Hook == CustomizeHook.Name {
		return CustomizeRequest(b.Object, d.Parent.Object)
	}
	return b.Descriptor.Request(b, d)
}

// NamespacedTwin returns the namespaced twin of cluster-scoped kind d: the same hooks and
// behaviour, served as resource under kind, read by read (which decodes the twin's type and
// declares it as d's would). A twin's controllers are confined to their namespace: their
// parents, children and inputs are objects of namespaced resources in it, their related
// objects too, and their writes impersonate a ServiceAccount of it (reconcile.New and the
// manager enforce this, whatever the hooks return).
func (d *Descriptor) NamespacedTwin(kind string, resource schema.GroupVersionResource, read func(decode func(into any) error) (*Declared, error)) *Descriptor {
	twin := *d
	twin.Kind, twin.Resource, twin.Read, twin.Namespaced = kind, resource, read, true
	twin.FinalizerPrefix = "metascript.dev/" + strings.ToLower(kind) + "-"
	twin.FieldManagerPrefix = "namespaced/" + d.FieldManagerPrefix
	return &twin
}

// ReadAs returns a Descriptor.Read that decodes into a new T and says what declare makes of
// it: each kind's read, and its namespaced twin's, without restating the decoding.
func ReadAs[T any](declare func(*T) *Declared) func(decode func(into any) error) (*Declared, error) {
	return func(decode func(into any) error) (*Declared, error) {
		v := new(T)
		if err := decode(v); err != nil {
			return nil, err
		}
		return declare(v), nil
	}
}

// Name is the kind in lower case: the prefix of every controller's name in logs, metrics,
// work queues and compile positions (compositecontroller/NAME).
func (d *Descriptor) Name() string { return strings.ToLower(d.Kind) }

// Ref names one controller of the kind by its key (Declared.Key): compositecontroller/NAME,
// namespacedcompositecontroller/NAMESPACE/NAME.
func (d *Descriptor) Ref(name string) string { return d.Name() + "/" + name }

// Primary is the hook called for a parent that is not finalizing.
func (d *Descriptor) Primary() Hook {
	for _, h := range d.Hooks {
		if h.Primary {
			return h
		}
	}
	panic(fmt.Sprintf("%s: descriptor without a primary hook", d.Kind))
}

// Hook is one hook of a controller kind.
type Hook struct {
	Name string
	// Required hooks are defined by every controller of the kind (the primary hook).
	Required bool
	// Primary is the hook called for a parent that is not finalizing.
	Primary bool
	// Request are the top-level fields of the hook's request, as the engine sends it.
	Request []string
	// Response are the top-level fields the engine accepts in the hook's response; any other
	// field makes the response invalid.
	Response []string
}

// Declared is one controller resource as its kind's Descriptor.Read finds it.
type Declared struct {
	// Name is the controller's metadata.name.
	Name string
	// Namespace is the controller's metadata.namespace: set only for a namespaced kind, whose
	// controllers are confined to it.
	Namespace string
	// Isolation is where the controller's inline hooks run (spec.isolation).
	Isolation v1alpha1.Isolation
	// Hooks are the hooks the resource defines, by name; hooks it leaves out are absent.
	Hooks map[string]*v1alpha1.Hook
	// Script is spec.script, the helper code the hooks share; nil when there is none.
	Script *v1alpha1.SharedScript
	// EndpointConfigs are the connection settings of webhooks by host.
	EndpointConfigs []v1alpha1.EndpointConfig
	// HookRollout is spec.hookRollout: how a change of the hooks rolls out; nil: at once.
	HookRollout *v1alpha1.HookRolloutPolicy
	// ServiceAccount is the account the controller's writes impersonate; nil: the engine's.
	ServiceAccount *v1alpha1.ServiceAccountReference
	// Resources are the resource rules the controller names, in the order Configure reads
	// them resolved.
	Resources []ResourceRef
	// Typed is the decoded resource: *v1alpha1.CompositeController, ... by kind.
	Typed any
}

// Key is the controller's cache key: NAMESPACE/NAME for a namespaced kind, NAME otherwise.
func (d *Declared) Key() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "/" + d.Name
}

// MarkName is the controller's name as the marks it claims attachments and outputs by hold
// it: its name, or a namespaced kind's "namespaced_"+name, which no cluster-scoped
// controller's name can be (object names hold no underscore), so that the two never claim
// each other's objects.
func (d *Declared) MarkName() string {
	if d.Namespace == "" {
		return d.Name
	}
	return "namespaced_" + d.Name
}

// ResourceRef is one resource rule of a controller and the field that declares it
// (spec.childResources[0]), for errors.
type ResourceRef struct {
	Field string
	Rule  v1alpha1.ResourceRule
}

// Built is a declared controller ready to configure.
type Built struct {
	*Declared
	// Descriptor is the controller's kind.
	Descriptor *Descriptor
	// Object is the controller resource in JSON shape, as hooks see it (request.controller).
	Object map[string]any
	// Resources are Declared.Resources resolved, in the same order.
	Resources []resources.Resource
	// Hooks are the built hooks by name.
	Hooks map[string]hooks.Invoker
}

// CustomizeHook is the customize hook, the same for every kind that has one: it names the
// related objects a parent's other hooks see.
var CustomizeHook = Hook{Name: "customize", Request: []string{"controller", "parent"}, Response: related.ResponseFields}

// FieldManager is the field manager of every write made for the controller.
func (b *Built) FieldManager() string {
	return apply.FieldManager(b.Descriptor.FieldManagerPrefix + b.Key())
}

// DefinedHooks returns hooks without the ones that are not defined (nil).
func DefinedHooks(hooks map[string]*v1alpha1.Hook) map[string]*v1alpha1.Hook {
	for name, h := range hooks {
		if h == nil {
			delete(hooks, name)
		}
	}
	return hooks
}
