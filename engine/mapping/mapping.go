// Package mapping is MapController's front door into the reconcile skeleton
// (engine/reconcile): "for every matching X, keep these Ys". A parent's inputs are the
// objects of the input resources in its namespace that its duck-typed spec.selector matches
// (all of them when it is empty), except those it controls itself. The map hook is called
// once per input and returns that input's outputs; outputs are owned by the parent, carry the
// controller's mark and their input's map key (its UID) as labels, and are claimed by mark.
// Outputs whose input is gone are detached: deleted, or, with a tombstone hook, kept as far as
// it says. The engine computes the parent's status from the inputs and outputs.
//
// Calls are incremental: a parent remembers, per map key, what its last call saw (the input's
// resourceVersion, the parent's generation and metadata, the outputs as its own writes left
// them) and calls the hook again only when one of those changed, or a resync or the hook's
// resyncAfterSeconds is due. A map call that fails in any way changes nothing for its input
// and is reported naming the input; every other input proceeds. One parent's calls run in
// parallel, up to a bound.
package mapping

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/selector"
)

// Labels the engine writes on outputs.
const (
	// ControllerLabel marks the outputs of one MapController: its name (hashed when longer
	// than a label value may be).
	ControllerLabel = "metascript.dev/map-controller"
	// MapKeyLabel holds the map key of the input an output was made for: the input's UID.
	MapKeyLabel = "metascript.dev/map-key"
)

// Descriptor is the MapController kind.
var Descriptor = &reconcile.Descriptor{
	Kind:     "MapController",
	Resource: v1alpha1.MapControllerResource,
	Hooks: []reconcile.Hook{
		{Name: "map", Required: true, Primary: true, Request: mapRequestFields, Response: responseFields},
		{Name: "tombstone", Request: tombstoneRequestFields, Response: responseFields},
	},
	FinalizerPrefix:    "metascript.dev/mapcontroller-",
	FieldManagerPrefix: "map/",
	Read:               reconcile.ReadAs(declare),
	Configure:          configure,
	Request:            request,
}

// NamespacedDescriptor is the NamespacedMapController kind: a MapController confined to its
// namespace.
var NamespacedDescriptor = Descriptor.NamespacedTwin("NamespacedMapController", v1alpha1.NamespacedMapControllerResource,
	reconcile.ReadAs(func(n *v1alpha1.NamespacedMapController) *reconcile.Declared {
		return declare(&v1alpha1.MapController{TypeMeta: n.TypeMeta, ObjectMeta: n.ObjectMeta, Spec: n.Spec})
	}))

// declare says what a MapController, or its namespaced twin's spec, declares.
func declare(mc *v1alpha1.MapController) *reconcile.Declared {
	h := mc.Spec.Hooks
	if h == nil {
		h = &v1alpha1.MapControllerHooks{}
	}
	d := &reconcile.Declared{Name: mc.Name, Namespace: mc.Namespace, Script: mc.Spec.Script, EndpointConfigs: mc.Spec.EndpointConfigs,
		ServiceAccount: mc.Spec.ServiceAccount, HookRollout: mc.Spec.HookRollout, Isolation: mc.Spec.Isolation, Typed: mc,
		Hooks: reconcile.DefinedHooks(map[string]*v1alpha1.Hook{"map": h.Map, "tombstone": h.Tombstone})}
	d.Resources = append(d.Resources, reconcile.ResourceRef{Field: "spec.parentResource", Rule: mc.Spec.ParentResource.ResourceRule})
	for i, r := range mc.Spec.InputResources {
		d.Resources = append(d.Resources, reconcile.ResourceRef{Field: fmt.Sprintf("spec.inputResources[%d]", i), Rule: r})
	}
	for i, o := range mc.Spec.OutputResources {
		d.Resources = append(d.Resources, reconcile.ResourceRef{Field: fmt.Sprintf("spec.outputResources[%d]", i), Rule: o.ResourceRule})
	}
	return d
}

// configure validates a MapController and returns its Runner, not started yet. Its resources
// are the parent's, spec.inputResources, then spec.outputResources, in order.
func configure(b *reconcile.Built, env reconcile.Env) (*reconcile.Runner, error) {
	mc := b.Typed.(*v1alpha1.MapController)
	parent := b.Resources[0]
	inputs := b.Resources[1 : 1+len(mc.Spec.InputResources)]
	outputs := b.Resources[1+len(mc.Spec.InputResources):]
	sel, err := reconcile.LabelSelector("spec.parentResource.labelSelector", mc.Spec.ParentResource.LabelSelector)
	if err != nil {
		return nil, err
	}
	k := &kind{
		controller:  b.Object,
		parent:      reconcile.ParentResource{Resource: parent, IgnoreStatusChanges: reconcile.Flag(mc.Spec.ParentResource.IgnoreStatusChanges)},
		parentSel:   sel,
		inputs:      inputs,
		mark:        &claim.Mark{Key: ControllerLabel, Value: MarkValue(b.MarkName()), Label: true},
		selectors:   selector.NewCacheSelectingAll(),
		hookVersion: reconcile.HookVersion(b.Declared.Hooks["map"]),
		tombstone:   b.Hooks["tombstone"] != nil,
		resync:      reconcile.ResyncPeriod(mc.Spec.ResyncPeriodSeconds),
		memos:       newMemos(),
	}
	watches := reconcile.Watches{ParentIndexes: index.RegisterParentIndexes, Forget: k.forget}
	for i, res := range inputs {
		if err := reconcile.CheckScope(fmt.Sprintf("spec.inputResources[%d]", i), res, "spec.parentResource", parent); err != nil {
			return nil, fmt.Errorf("%w: a parent's inputs are in its namespace", err)
		}
		watches.Inputs = append(watches.Inputs, reconcile.Input{Resource: res, Map: k.inputParents})
	}
	for i, res := range outputs {
		field := fmt.Sprintf("spec.outputResources[%d]", i)
		if err := reconcile.CheckScope(field, res, "spec.parentResource", parent); err != nil {
			return nil, err
		}
		var method v1alpha1.ChildUpdateMethod
		if us := mc.Spec.OutputResources[i].UpdateStrategy; us != nil {
			method = v1alpha1.ChildUpdateMethod(us.Method)
		}
		method, err := reconcile.UpdateMethod(field+".updateStrategy.method", method, reconcile.BasicMethods)
		if err != nil {
			return nil, err
		}
		k.rules = append(k.rules, protocol.ChildRule{Resource: res, Method: method})
	}
	return reconcile.New(b, reconcile.Config{
		Env:          env,
		Kind:         k,
		Parents:      []reconcile.ParentResource{k.parent},
		Children:     k.rules,
		Watches:      watches,
		ResyncPeriod: k.resync,
	})
}

// MarkValue is the ControllerLabel value of a controller's outputs: its name, or when longer
// than 63 characters a prefix of it and a hash, so that distinct names stay distinct.
func MarkValue(name string) string { return reconcile.LabelValue(name) }

var (
	_ reconcile.Kind  = (*kind)(nil)
	_ reconcile.Asked = (*asked)(nil)
)

// kind is MapController's reconcile.Kind.
type kind struct {
	controller  map[string]any
	parent      reconcile.ParentResource
	parentSel   labels.Selector // spec.parentResource.labelSelector
	inputs      []resources.Resource
	rules       []protocol.ChildRule
	mark        *claim.Mark
	selectors   *selector.Cache // parents' spec.selector; empty selects every input
	hookVersion v1alpha1.HookVersion
	tombstone   bool
	resync      time.Duration
	memos       *memos
}

// ParentSelector is spec.parentResource.labelSelector (reconcile.LabelSelected).
func (k *kind) ParentSelector(int) labels.Selector { return k.parentSel }

func (k *kind) Selects(_ int, parent *unstructured.Unstructured) bool {
	return k.parentSel.Matches(selector.Labels(parent))
}

func (k *kind) Claimant(parent *unstructured.Unstructured) (claim.Parent, error) {
	if _, err := k.selectors.Get(parent); err != nil {
		return claim.Parent{}, err
	}
	p := claim.ParentOf(parent, nil)
	p.Mark = k.mark
	return p, nil
}

// forget drops what the kind keeps of a parent gone from the cache.
func (k *kind) forget(parent *unstructured.Unstructured) {
	k.selectors.Forget(parent.GetUID())
	k.memos.forget(parent.GetUID())
}

// inputParents returns the parents whose selector matches the input, through the parents'
// selector-term index.
func (k *kind) inputParents(input *unstructured.Unstructured, parents []cache.Indexer) []reconcile.Request {
	ns := ""
	if k.parent.Namespaced {
		ns = input.GetNamespace()
	}
	var out []reconcile.Request
	for _, p := range k.selectors.Candidates(parents[0], ns, input.GetLabels()) {
		if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
			out = append(out, reconcile.Request{Key: key})
		}
	}
	return out
}
