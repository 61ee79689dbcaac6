// Package composite is CompositeController's front door into the reconcile skeleton
// (engine/reconcile): its parents are the objects of one parent resource, selected by
// spec.parentResource.labelSelector; each parent claims children by its spec.selector (or,
// with generateSelector, by a label holding its UID), adopting matching orphans; the sync
// and finalize hooks get the reference's request and return children and status; the
// parent's status is replaced by the hook's.
package composite

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/revision"
	"metascript.dev/metascript/engine/selector"
)

// Labels and finalizers the engine writes.
const (
	// ControllerUIDLabel holds the parent's UID on children of generateSelector controllers.
	ControllerUIDLabel = "metascript.dev/controller-uid"
	// FinalizerPrefix + controller name is the finalizer held while a finalize hook exists.
	FinalizerPrefix = "metascript.dev/compositecontroller-"
)

// Spec is one CompositeController, resolved and compiled.
type Spec struct {
	Controller *v1alpha1.CompositeController
	// ControllerObject is the controller resource as hooks see it (request.controller).
	ControllerObject map[string]any
	Parent           resources.Resource
	Children         []resources.Resource
	// Hooks by name: sync (required), finalize and customize.
	Hooks map[string]hooks.Invoker
	// Revisions is the ControllerRevision resource, required when a child rule rolls.
	Revisions *resources.Resource
}

// New validates spec and returns the controller's Runner, not started yet.
func New(spec Spec, env reconcile.Env) (*reconcile.Runner, error) {
	cc := spec.Controller
	sel := labels.Everything()
	if ls := cc.Spec.ParentResource.LabelSelector; ls != nil {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("spec.parentResource.labelSelector: %w", err)
		}
		sel = s
	}
	k := &kind{
		controller:  spec.ControllerObject,
		parentSel:   sel,
		generate:    cc.Spec.GenerateSelector != nil && *cc.Spec.GenerateSelector,
		selectors:   selector.NewCache(),
		client:      env.Client,
		parent:      reconcile.ParentResource{Resource: spec.Parent},
		hookVersion: v1alpha1.HookVersionV1,
	}
	if h := cc.Spec.Hooks; h != nil && h.Sync != nil && h.Sync.Version != "" {
		k.hookVersion = h.Sync.Version
	}
	if ig := cc.Spec.ParentResource.IgnoreStatusChanges; ig != nil {
		k.parent.IgnoreStatusChanges = *ig
	}
	for i, res := range spec.Children {
		if spec.Parent.Namespaced && !res.Namespaced {
			return nil, fmt.Errorf("spec.childResources[%d]: %s is cluster-scoped but the parent %s is namespaced",
				i, res.GVR.Resource, spec.Parent.GVR.Resource)
		}
		method := v1alpha1.ChildUpdateOnDelete
		us := cc.Spec.ChildResources[i].UpdateStrategy
		if us != nil && us.Method != "" {
			method = us.Method
		}
		switch method {
		case v1alpha1.ChildUpdateRollingInPlace, v1alpha1.ChildUpdateRollingRecreate:
			if err := k.roll(spec, i, us, env); err != nil {
				return nil, err
			}
			// The skeleton writes a rolling child as the revision it belongs to asks.
			method = map[v1alpha1.ChildUpdateMethod]v1alpha1.ChildUpdateMethod{
				v1alpha1.ChildUpdateRollingInPlace:  v1alpha1.ChildUpdateInPlace,
				v1alpha1.ChildUpdateRollingRecreate: v1alpha1.ChildUpdateRecreate}[method]
		}
		k.rules = append(k.rules, reconcile.ChildRule{Resource: res, Method: method})
	}
	var resync time.Duration
	if p := cc.Spec.ResyncPeriodSeconds; p != nil && *p > 0 {
		resync = time.Duration(*p) * time.Second
	}
	k.fieldManager = apply.FieldManager(cc.Name)
	var inputs []resources.Resource
	if k.rolling != nil {
		inputs = []resources.Resource{*spec.Revisions}
		k.rolling.store = revision.Store{Client: env.Client, FieldManager: k.fieldManager}
	}
	return reconcile.New(reconcile.Config{
		Inputs:           inputs,
		Env:              env,
		ControllerObject: spec.ControllerObject,
		HookVersion:      k.hookVersion,
		Name:             "compositecontroller/" + cc.Name,
		Kind:             k,
		FieldManager:     k.fieldManager,
		Finalizer:        FinalizerPrefix + cc.Name,
		Parents:          []reconcile.ParentResource{k.parent},
		Children:         k.rules,
		Hooks:            spec.Hooks,
		ResyncPeriod:     resync,
	})
}

// kind implements reconcile.Kind, OrphanRouter, ParentIndexer and ParentForgetter.
type kind struct {
	controller   map[string]any
	parent       reconcile.ParentResource
	parentSel    labels.Selector // spec.parentResource.labelSelector
	rules        []reconcile.ChildRule
	generate     bool
	hookVersion  v1alpha1.HookVersion
	selectors    *selector.Cache // parents' spec.selector, parsed once per resourceVersion
	client       dynamic.Interface
	fieldManager string
	rolling      *rolling // nil unless a child rule rolls
}

// roll sets up rolling updates for child rule i.
func (k *kind) roll(spec Spec, i int, us *v1alpha1.ChildUpdateStrategy, env reconcile.Env) error {
	switch {
	case !spec.Parent.Namespaced:
		return fmt.Errorf("spec.childResources[%d].updateStrategy.method: %s needs a namespaced parent (revisions live in its namespace)", i, us.Method)
	case spec.Revisions == nil:
		return fmt.Errorf("spec.childResources[%d].updateStrategy.method: %s needs the ControllerRevision resource (install the engine's CRDs)", i, us.Method)
	}
	if k.rolling == nil {
		k.rolling = &rolling{paths: revision.DefaultFieldPaths, rules: map[int][]v1alpha1.StatusConditionCheck{}}
		if rh := spec.Controller.Spec.ParentResource.RevisionHistory; rh != nil && len(rh.FieldPaths) > 0 {
			k.rolling.paths = rh.FieldPaths
		}
	}
	var checks []v1alpha1.StatusConditionCheck
	if us.StatusChecks != nil {
		checks = us.StatusChecks.Conditions
	}
	k.rolling.rules[i] = checks
	return nil
}

func (k *kind) Selects(_ int, parent *unstructured.Unstructured) bool {
	return k.parentSel.Matches(labels.Set(parent.GetLabels()))
}

func (k *kind) Claimant(parent *unstructured.Unstructured) (claim.Parent, error) {
	sel, _, err := k.selectorOf(parent)
	if err != nil {
		return claim.Parent{}, err
	}
	return claim.ParentOf(parent, sel), nil
}

func (k *kind) ParentIndexes(inf index.Informer) error { return index.RegisterParentIndexes(inf) }

func (k *kind) Forget(parent *unstructured.Unstructured) { k.selectors.Forget(parent.GetUID()) }

// selectorOf returns the parent's child selector and the labels the engine adds to every
// child: the parent's spec.selector, or with generateSelector the UID label.
func (k *kind) selectorOf(parent *unstructured.Unstructured) (labels.Selector, map[string]string, error) {
	if k.generate {
		l := map[string]string{ControllerUIDLabel: string(parent.GetUID())}
		return labels.SelectorFromSet(l), l, nil
	}
	sel, err := k.selectors.Get(parent)
	return sel, nil, err
}
