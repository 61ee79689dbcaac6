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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/index"
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

// DefaultParallelism bounds how many map calls of one parent run at once.
const DefaultParallelism = 8

// Spec is one MapController, resolved and compiled.
type Spec struct {
	Controller *v1alpha1.MapController
	// ControllerObject is the controller resource as hooks see it (request.controller).
	ControllerObject map[string]any
	Parent           resources.Resource
	Inputs, Outputs  []resources.Resource
	// Hooks by name: map (required) and tombstone.
	Hooks map[string]hooks.Invoker
}

// New validates spec and returns the controller's Runner, not started yet.
func New(spec Spec, env reconcile.Env) (*reconcile.Runner, error) {
	mc := spec.Controller
	sel := labels.Everything()
	if ls := mc.Spec.ParentResource.LabelSelector; ls != nil {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("spec.parentResource.labelSelector: %w", err)
		}
		sel = s
	}
	k := &kind{
		controller:   spec.ControllerObject,
		parent:       reconcile.ParentResource{Resource: spec.Parent},
		parentSel:    sel,
		inputs:       spec.Inputs,
		mark:         &claim.Mark{Key: ControllerLabel, Value: MarkValue(mc.Name), Label: true},
		selectors:    selector.NewCacheSelectingAll(),
		client:       env.Client,
		fieldManager: apply.FieldManager("map/" + mc.Name),
		hookVersion:  v1alpha1.HookVersionV1,
		tombstone:    spec.Hooks["tombstone"] != nil,
		parallelism:  DefaultParallelism,
		memos:        newMemos(),
	}
	if h := mc.Spec.Hooks; h != nil && h.Map != nil && h.Map.Version != "" {
		k.hookVersion = h.Map.Version
	}
	if ig := mc.Spec.ParentResource.IgnoreStatusChanges; ig != nil {
		k.parent.IgnoreStatusChanges = *ig
	}
	if p := mc.Spec.ResyncPeriodSeconds; p != nil && *p > 0 {
		k.resync = time.Duration(*p) * time.Second
	}
	for i, res := range spec.Inputs {
		if spec.Parent.Namespaced && !res.Namespaced {
			return nil, fmt.Errorf("spec.inputResources[%d]: %s is cluster-scoped but the parent %s is namespaced: a parent's inputs are in its namespace",
				i, res.GVR.Resource, spec.Parent.GVR.Resource)
		}
	}
	for i, res := range spec.Outputs {
		if spec.Parent.Namespaced && !res.Namespaced {
			return nil, fmt.Errorf("spec.outputResources[%d]: %s is cluster-scoped but the parent %s is namespaced",
				i, res.GVR.Resource, spec.Parent.GVR.Resource)
		}
		method := v1alpha1.ChildUpdateOnDelete
		if us := mc.Spec.OutputResources[i].UpdateStrategy; us != nil && us.Method != "" {
			method = v1alpha1.ChildUpdateMethod(us.Method)
		}
		switch method {
		case v1alpha1.ChildUpdateOnDelete, v1alpha1.ChildUpdateRecreate, v1alpha1.ChildUpdateInPlace:
		default:
			return nil, fmt.Errorf("spec.outputResources[%d].updateStrategy.method: %q is not one of OnDelete, Recreate, InPlace", i, method)
		}
		k.rules = append(k.rules, reconcile.ChildRule{Resource: res, Method: method})
	}
	return reconcile.New(reconcile.Config{
		Env:          env,
		Name:         "mapcontroller/" + mc.Name,
		Kind:         k,
		FieldManager: k.fieldManager,
		Finalizer:    "metascript.dev/mapcontroller-" + mc.Name,
		Parents:      []reconcile.ParentResource{k.parent},
		Children:     k.rules,
		Inputs:       spec.Inputs,
		Hooks:        spec.Hooks,
		PrimaryHook:  "map",
		ResyncPeriod: k.resync,
	})
}

// MarkValue is the ControllerLabel value of a controller's outputs: its name, or when longer
// than 63 characters a prefix of it and a hash, so that distinct names stay distinct.
func MarkValue(name string) string {
	const limit = 63
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return name[:limit-len(suffix)] + suffix
}

// kind implements reconcile.Kind, InputRouter, ParentIndexer and ParentForgetter.
type kind struct {
	controller   map[string]any
	parent       reconcile.ParentResource
	parentSel    labels.Selector // spec.parentResource.labelSelector
	inputs       []resources.Resource
	rules        []reconcile.ChildRule
	mark         *claim.Mark
	selectors    *selector.Cache // parents' spec.selector; empty selects every input
	client       dynamic.Interface
	fieldManager string
	hookVersion  v1alpha1.HookVersion
	tombstone    bool
	resync       time.Duration
	parallelism  int
	memos        *memos
}

func (k *kind) Selects(_ int, parent *unstructured.Unstructured) bool {
	return k.parentSel.Matches(labels.Set(parent.GetLabels()))
}

func (k *kind) Claimant(parent *unstructured.Unstructured) (claim.Parent, error) {
	if _, err := k.selectors.Get(parent); err != nil {
		return claim.Parent{}, err
	}
	p := claim.ParentOf(parent, nil)
	p.Mark = k.mark
	return p, nil
}

func (k *kind) ParentIndexes(inf index.Informer) error { return index.RegisterParentIndexes(inf) }

func (k *kind) Forget(parent *unstructured.Unstructured) {
	k.selectors.Forget(parent.GetUID())
	k.memos.forget(parent.GetUID())
}

// RouteInput returns the parents whose selector matches the input, through the parents'
// selector-term index.
func (k *kind) RouteInput(input *unstructured.Unstructured, parents []cache.Indexer) []reconcile.Request {
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
