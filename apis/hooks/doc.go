// Package hooks is the hook protocol as Go types: field by field, the request and the
// response of every hook of every controller kind, in the JSON shape the engine sends and
// accepts, whether the hook is inline (Starlark, JavaScript) or a webhook. The engine itself
// builds and reads these messages as JSON-shaped maps (engine/composite, engine/decorator,
// engine/mapping, engine/related); the types here describe them for hook authors: a Go
// webhook can decode a request into them, and `metascript types` generates the TypeScript
// declarations of JavaScript hooks from them. Tests in the engine's packages keep the two
// in agreement.
package hooks

import (
	"reflect"
	"strings"
)

// Hook is one hook of one controller kind and the types of its request and response. A
// namespaced twin (NamespacedCompositeController) has its kind's hooks.
type Hook struct {
	// Kind is the controller kind: CompositeController, DecoratorController, MapController.
	Kind string
	// Name is the hook's name in spec.hooks: sync, finalize, customize, map, tombstone.
	Name string
	// Doc says when the engine calls the hook, for people.
	Doc string
	// Request and Response are the struct types of the hook's request and response.
	Request, Response reflect.Type
}

// TypeName names the hook's function type in the TypeScript declarations (`metascript
// types`): its kind and its name, CompositeControllerSync.
func (h Hook) TypeName() string {
	return h.Kind + strings.ToUpper(h.Name[:1]) + h.Name[1:]
}

// Hooks are the hooks of every controller kind, in the order of the kinds and their hooks.
var Hooks = []Hook{
	{"CompositeController", "sync",
		"The sync hook of a CompositeController: called for each parent that is not being deleted; answers with the parent's status and the children it should have.",
		reflect.TypeFor[CompositeRequest](), reflect.TypeFor[CompositeResponse]()},
	{"CompositeController", "finalize",
		"The finalize hook of a CompositeController: called instead of sync while the parent is being deleted, until it answers finalized: true.",
		reflect.TypeFor[CompositeRequest](), reflect.TypeFor[CompositeResponse]()},
	{"CompositeController", "customize",
		"The customize hook of a CompositeController: names the related objects the parent's sync and finalize hooks see under request.related.",
		reflect.TypeFor[CustomizeRequest](), reflect.TypeFor[CustomizeResponse]()},
	{"DecoratorController", "sync",
		"The sync hook of a DecoratorController: called for each target that is not being deleted; answers with labels, annotations and status to set on the target, and its attachments.",
		reflect.TypeFor[DecoratorRequest](), reflect.TypeFor[DecoratorResponse]()},
	{"DecoratorController", "finalize",
		"The finalize hook of a DecoratorController: called instead of sync while the target is being deleted or once it stops matching, until it answers finalized: true.",
		reflect.TypeFor[DecoratorRequest](), reflect.TypeFor[DecoratorResponse]()},
	{"DecoratorController", "customize",
		"The customize hook of a DecoratorController: names the related objects the target's sync and finalize hooks see under request.related.",
		reflect.TypeFor[CustomizeRequest](), reflect.TypeFor[CustomizeResponse]()},
	{"MapController", "map",
		"The map hook of a MapController: called once per input whose world changed; answers with that input's outputs.",
		reflect.TypeFor[MapRequest](), reflect.TypeFor[MapResponse]()},
	{"MapController", "tombstone",
		"The tombstone hook of a MapController: called for each map key whose input is gone or no longer matches; answers with the outputs to keep.",
		reflect.TypeFor[TombstoneRequest](), reflect.TypeFor[TombstoneResponse]()},
}
