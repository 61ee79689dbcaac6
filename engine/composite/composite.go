// Package composite is CompositeController's front door into the reconcile skeleton
// (engine/reconcile): its parents are the objects of one parent resource, selected by
// spec.parentResource.labelSelector; each parent claims children by its spec.selector (or,
// with generateSelector, by a label holding its UID), adopting matching orphans; the sync
// and finalize hooks get the reference's request and return children and status; the
// parent's status is replaced by the hook's.
package composite

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/protocol"
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

// Descriptor is the CompositeController kind.
var Descriptor = &reconcile.Descriptor{
	Kind:     "CompositeController",
	Resource: v1alpha1.CompositeControllerResource,
	Hooks: []reconcile.Hook{
		{Name: "sync", Required: true, Primary: true, Request: requestFields, Response: responseFields},
		{Name: "finalize", Request: requestFields, Response: responseFields},
		reconcile.CustomizeHook,
	},
	FinalizerPrefix: FinalizerPrefix,
	Read:            reconcile.ReadAs(declare),
	Configure:       configure,
	Request:         request,
}

// revisionsField names the ControllerRevision resource among a controller's resources.
const revisionsField = "controllerrevisions.metascript.dev (for rolling updates)"

// NamespacedDescriptor is the NamespacedCompositeController kind: a CompositeController
// confined to its namespace.
var NamespacedDescriptor = Descriptor.NamespacedTwin("NamespacedCompositeController", v1alpha1.NamespacedCompositeControllerResource,
	reconcile.ReadAs(func(n *v1alpha1.NamespacedCompositeController) *reconcile.Declared {
		return declare(&v1alpha1.CompositeController{TypeMeta: n.TypeMeta, ObjectMeta: n.ObjectMeta, Spec: n.Spec})
	}))

// declare says what a CompositeController, or its namespaced twin's spec, declares.
func declare(cc *v1alpha1.CompositeController) *reconcile.Declared {
	h := cc.Spec.Hooks
	if h == nil {
		h = &v1alpha1.CompositeControllerHooks{}
	}
	d := &reconcile.Declared{Name: cc.Name, Namespace: cc.Namespace, Script: cc.Spec.Script, EndpointConfigs: cc.Spec.EndpointConfigs,
		ServiceAccount: cc.Spec.ServiceAccount, HookRollout: cc.Spec.HookRollout, Isolation: cc.Spec.Isolation, Typed: cc,
		Hooks: reconcile.DefinedHooks(map[string]*v1alpha1.Hook{"sync": h.Sync, "finalize": h.Finalize, "customize": h.Customize})}
	d.Resources = append(d.Resources, reconcile.ResourceRef{Field: "spec.parentResource", Rule: cc.Spec.ParentResource.ResourceRule})
	rolls := false
	for i, c := range cc.Spec.ChildResources {
		d.Resources = append(d.Resources, reconcile.ResourceRef{Field: fmt.Sprintf("spec.childResources[%d]", i), Rule: c.ResourceRule})
		rolls = rolls || c.UpdateStrategy != nil && isRolling(c.UpdateStrategy.Method)
	}
	if rolls {
		d.Resources = append(d.Resources, reconcile.ResourceRef{Field: revisionsField, Rule: v1alpha1.ResourceRule{
			APIVersion: v1alpha1.GroupVersion.String(), Resource: v1alpha1.ControllerRevisionResource.Resource}})
	}
	return d
}

func isRolling(m v1alpha1.ChildUpdateMethod) bool {
	return m == v1alpha1.ChildUpdateRollingInPlace || m == v1alpha1.ChildUpdateRollingRecreate
}

// configure validates a CompositeController and returns its Runner, not started yet. Its
// resources are the parent's, the children's in order, then the revisions' when a child
// rule rolls.
func configure(b *reconcile.Built, env reconcile.Env) (*reconcile.Runner, error) {
	cc := b.Typed.(*v1alpha1.CompositeController)
	parent, children := b.Resources[0], childResources(b)
	sel, err := reconcile.LabelSelector("spec.parentResource.labelSelector", cc.Spec.ParentResource.LabelSelector)
	if err != nil {
		return nil, err
	}
	k := &kind{
		parentSel:   sel,
		generate:    reconcile.Flag(cc.Spec.GenerateSelector),
		selectors:   selector.NewCache(),
		parent:      reconcile.ParentResource{Resource: parent, IgnoreStatusChanges: reconcile.Flag(cc.Spec.ParentResource.IgnoreStatusChanges)},
		hookVersion: reconcile.HookVersion(b.Declared.Hooks["sync"]),
		controller:  b.Object,
	}
	k.beyond = beyondMark(b, parent)
	for i, res := range children {
		field := fmt.Sprintf("spec.childResources[%d]", i)
		if err := reconcile.CheckChildScope(field, res, "spec.parentResource", parent, b.Descriptor.Kind, b.Namespace); err != nil {
			return nil, err
		}
		us := cc.Spec.ChildResources[i].UpdateStrategy
		var method v1alpha1.ChildUpdateMethod
		if us != nil {
			method = us.Method
		}
		method, err := reconcile.UpdateMethod(field+".updateStrategy.method", method, childMethods)
		if err != nil {
			return nil, err
		}
		if isRolling(method) {
			var revisions *resources.Resource
			if len(b.Resources) > 1+len(children) {
				revisions = &b.Resources[len(b.Resources)-1]
			}
			if err := k.roll(cc, parent, revisions, env.RevisionNamespace, i, us); err != nil {
				return nil, err
			}
			// The skeleton writes a rolling child as the revision it belongs to asks.
			method = map[v1alpha1.ChildUpdateMethod]v1alpha1.ChildUpdateMethod{
				v1alpha1.ChildUpdateRollingInPlace:  v1alpha1.ChildUpdateInPlace,
				v1alpha1.ChildUpdateRollingRecreate: v1alpha1.ChildUpdateRecreate}[method]
		}
		rule := protocol.ChildRule{Resource: res, Method: method, Beyond: k.beyond}
		if b.Namespace != "" {
			rule.Confined = b.Descriptor.Kind
		}
		k.rules = append(k.rules, rule)
	}
	watches := reconcile.Watches{ParentIndexes: index.RegisterParentIndexes, Orphans: k.orphanParents,
		OrphanSelector: k.orphanSelector, Forget: k.forget}
	if k.rolling != nil {
		// The revisions, whose events reach the parent that owns them (no Map).
		watches.Inputs = []reconcile.Input{{Resource: b.Resources[len(b.Resources)-1]}}
		k.rolling.store = revision.Store{Client: env.Client, FieldManager: b.FieldManager(), Namespace: k.rolling.namespace}
	}
	return reconcile.New(b, reconcile.Config{
		Env:          env,
		Kind:         k,
		Parents:      []reconcile.ParentResource{k.parent},
		Children:     k.rules,
		Watches:      watches,
		ResyncPeriod: reconcile.ResyncPeriod(cc.Spec.ResyncPeriodSeconds),
	})
}

// childMethods are the update methods of a CompositeController's children.
var (
	_ reconcile.Kind  = (*kind)(nil)
	_ reconcile.Asked = (*syncAsked)(nil)
	_ reconcile.Asked = (*rollingAsked)(nil)
)

var childMethods = append(slices.Clone(reconcile.BasicMethods), v1alpha1.ChildUpdateRollingRecreate, v1alpha1.ChildUpdateRollingInPlace)

// kind is CompositeController's reconcile.Kind.
type kind struct {
	controller  map[string]any
	parent      reconcile.ParentResource
	parentSel   labels.Selector // spec.parentResource.labelSelector
	rules       []protocol.ChildRule
	generate    bool
	hookVersion v1alpha1.HookVersion
	selectors   *selector.Cache // parents' spec.selector, parsed once per resourceVersion
	rolling     *rolling        // nil unless a child rule rolls
	beyond      *claim.Mark     // the mark of children beyond a parent's namespace; nil when there can be none (beyond.go)
}

// roll sets up rolling updates for child rule i.
func (k *kind) roll(cc *v1alpha1.CompositeController, parent resources.Resource, revisions *resources.Resource, revisionNamespace string,
	i int, us *v1alpha1.ChildUpdateStrategy) error {
	switch {
	case !parent.Namespaced && revisionNamespace == "":
		return fmt.Errorf("spec.childResources[%d].updateStrategy.method: %s of a cluster-scoped parent needs the engine's --revision-namespace (revisions of a namespaced parent live in its namespace)", i, us.Method)
	case revisions == nil:
		return fmt.Errorf("spec.childResources[%d].updateStrategy.method: %s needs the ControllerRevision resource (install the engine's CRDs)", i, us.Method)
	}
	if k.rolling == nil {
		k.rolling = &rolling{paths: revision.DefaultFieldPaths, rules: map[int][]v1alpha1.StatusConditionCheck{}}
		if !parent.Namespaced {
			k.rolling.namespace = revisionNamespace
		}
		if rh := cc.Spec.ParentResource.RevisionHistory; rh != nil && len(rh.FieldPaths) > 0 {
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

// ParentSelector is spec.parentResource.labelSelector (reconcile.LabelSelected).
func (k *kind) ParentSelector(int) labels.Selector { return k.parentSel }

func (k *kind) Selects(_ int, parent *unstructured.Unstructured) bool {
	return k.parentSel.Matches(selector.Labels(parent))
}

func (k *kind) Claimant(parent *unstructured.Unstructured) (claim.Parent, error) {
	sel, _, err := k.selectorOf(parent)
	if err != nil {
		return claim.Parent{}, err
	}
	p := claim.ParentOf(parent, sel)
	p.Beyond = k.beyond
	return p, nil
}

// orphanSelector is the selector parent adopts orphans by; nil when it is invalid.
func (k *kind) orphanSelector(parent *unstructured.Unstructured) labels.Selector {
	sel, _, err := k.selectorOf(parent)
	if err != nil {
		return nil
	}
	return sel
}

// forget drops what the kind keeps of a parent gone from the cache.
func (k *kind) forget(parent *unstructured.Unstructured) { k.selectors.Forget(parent.GetUID()) }

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
