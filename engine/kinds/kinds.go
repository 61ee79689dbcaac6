// Package kinds lists the controller kinds: the one place that names them all. The manager
// runs a controller of each kind listed here, and the offline commands read each of them,
// from its descriptor alone.
package kinds

import (
	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/engine/decorator"
	"metascript.dev/metascript/engine/mapping"
	"metascript.dev/metascript/engine/reconcile"
)

// All are the controller kinds, in a fixed order.
var All = []*reconcile.Descriptor{composite.Descriptor, decorator.Descriptor, mapping.Descriptor,
	composite.NamespacedDescriptor, decorator.NamespacedDescriptor, mapping.NamespacedDescriptor}

// Lookup returns the kind whose resource's kind is kind (CompositeController), or nil.
func Lookup(kind string) *reconcile.Descriptor {
	for _, d := range All {
		if d.Kind == kind {
			return d
		}
	}
	return nil
}

// Names are the kinds of All, in order (CompositeController, ...).
func Names() []string {
	out := make([]string, len(All))
	for i, d := range All {
		out[i] = d.Kind
	}
	return out
}
