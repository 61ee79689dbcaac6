// Package decorator is DecoratorController's front door into the reconcile skeleton
// (engine/reconcile): its parents (targets) are the objects of several resources, each chosen
// by a label and an annotation selector; a target's attachments are the objects it controls
// that carry this decorator's mark (claim by mark: no adoption, and two decorators on one
// target never see each other's attachments); the sync and finalize hooks get Metacontroller's
// decorator request and return labels, annotations, status and attachments; the target's own
// fields are written by server-side apply under the decorator's field manager, so that keys
// and fields set by anyone else stay.
//
// A target that stops matching the selectors is finalized once when a finalize hook exists
// (it still holds the finalizer), and left alone from then on; its attachments stay until the
// target is deleted.
package decorator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/selector"
)

// Annotations and finalizers the engine writes.
const (
	// MarkAnnotation holds the name of the decorator that made an attachment.
	MarkAnnotation = "metascript.dev/decorator-controller"
	// FinalizerPrefix + controller name is the finalizer held while a finalize hook exists.
	FinalizerPrefix = "metascript.dev/decoratorcontroller-"
)

// Descriptor is the DecoratorController kind.
var Descriptor = &reconcile.Descriptor{
	Kind:     "DecoratorController",
	Resource: v1alpha1.DecoratorControllerResource,
	Hooks: []reconcile.Hook{
		{Name: "sync", Required: true, Primary: true, Request: requestFields, Response: responseFields},
		{Name: "finalize", Request: requestFields, Response: responseFields},
		reconcile.CustomizeHook,
	},
	FinalizerPrefix:    FinalizerPrefix,
	FieldManagerPrefix: "decorator/",
	FinalizeDeselected: true,
	Read:               reconcile.ReadAs(declare),
	Configure:          configure,
	ParentField:        "object",
	Request:            request,
}

// NamespacedDescriptor is the NamespacedDecoratorController kind: a DecoratorController
// confined to its namespace.
var NamespacedDescriptor = Descriptor.NamespacedTwin("NamespacedDecoratorController", v1alpha1.NamespacedDecoratorControllerResource,
	reconcile.ReadAs(func(n *v1alpha1.NamespacedDecoratorController) *reconcile.Declared {
		return declare(&v1alpha1.DecoratorController{TypeMeta: n.TypeMeta, ObjectMeta: n.ObjectMeta, Spec: n.Spec})
	}))

// declare says what a DecoratorController, or its namespaced twin's spec, declares.
func declare(dc *v1alpha1.DecoratorController) *reconcile.Declared {
	h := dc.Spec.Hooks
	if h == nil {
		h = &v1alpha1.DecoratorControllerHooks{}
	}
	d := &reconcile.Declared{Name: dc.Name, Namespace: dc.Namespace, Script: dc.Spec.Script, EndpointConfigs: dc.Spec.EndpointConfigs,
		ServiceAccount: dc.Spec.ServiceAccount, HookRollout: dc.Spec.HookRollout, Isolation: dc.Spec.Isolation, Typed: dc,
		Hooks: reconcile.DefinedHooks(map[string]*v1alpha1.Hook{"sync": h.Sync, "finalize": h.Finalize, "customize": h.Customize})}
	for i, r := range dc.Spec.Resources {
		d.Resources = append(d.Resources, reconcile.ResourceRef{Field: fmt.Sprintf("spec.resources[%d]", i), Rule: r.ResourceRule})
	}
	for i, a := range dc.Spec.Attachments {
		d.Resources = append(d.Resources, reconcile.ResourceRef{Field: fmt.Sprintf("spec.attachments[%d]", i), Rule: a.ResourceRule})
	}
	return d
}

// configure validates a DecoratorController and returns its Runner, not started yet. Its
// resources are spec.resources, then spec.attachments, in order.
func configure(b *reconcile.Built, env reconcile.Env) (*reconcile.Runner, error) {
	dc := b.Typed.(*v1alpha1.DecoratorController)
	targets, attachments := b.Resources[:len(dc.Spec.Resources)], b.Resources[len(dc.Spec.Resources):]
	k := &kind{
		controller:  b.Object,
		mark:        &claim.Mark{Key: MarkAnnotation, Value: b.MarkName()},
		hookVersion: reconcile.HookVersion(b.Declared.Hooks["sync"]),
	}
	for i, res := range targets {
		rule := dc.Spec.Resources[i]
		sel, err := reconcile.LabelSelector(fmt.Sprintf("spec.resources[%d].labelSelector", i), rule.LabelSelector)
		if err != nil {
			return nil, err
		}
		t := target{ParentResource: reconcile.ParentResource{Resource: res, IgnoreStatusChanges: reconcile.Flag(rule.IgnoreStatusChanges)},
			labels: sel}
		if as := rule.AnnotationSelector; as != nil {
			sel, err := newAnnotationSelector(as)
			if err != nil {
				return nil, fmt.Errorf("spec.resources[%d].annotationSelector: %w", i, err)
			}
			t.annotations = sel
		}
		k.targets = append(k.targets, t)
	}
	for i, res := range attachments {
		field := fmt.Sprintf("spec.attachments[%d]", i)
		var method v1alpha1.ChildUpdateMethod
		if us := dc.Spec.Attachments[i].UpdateStrategy; us != nil {
			method = v1alpha1.ChildUpdateMethod(us.Method)
		}
		method, err := reconcile.UpdateMethod(field+".updateStrategy.method", method, reconcile.BasicMethods)
		if err != nil {
			return nil, err
		}
		for j, t := range targets {
			if err := reconcile.CheckScope(field, res, fmt.Sprintf("spec.resources[%d]", j), t); err != nil {
				return nil, err
			}
		}
		k.rules = append(k.rules, protocol.ChildRule{Resource: res, Method: method})
	}
	parents := make([]reconcile.ParentResource, len(k.targets))
	for i, t := range k.targets {
		parents[i] = t.ParentResource
	}
	return reconcile.New(b, reconcile.Config{
		Env:          env,
		Kind:         k,
		Parents:      parents,
		Children:     k.rules,
		Watches:      reconcile.Watches{Owns: k.owns},
		ResyncPeriod: reconcile.ResyncPeriod(dc.Spec.ResyncPeriodSeconds),
	})
}

// target is one rule of spec.resources.
type target struct {
	reconcile.ParentResource
	labels      labels.Selector
	annotations *annotationSelector // nil selects everything
}

var (
	_ reconcile.Kind  = (*kind)(nil)
	_ reconcile.Asked = (*asked)(nil)
)

// kind is DecoratorController's reconcile.Kind.
type kind struct {
	controller  map[string]any
	targets     []target
	rules       []protocol.ChildRule
	mark        *claim.Mark
	hookVersion v1alpha1.HookVersion
}

// ParentSelector is spec.resources[res].labelSelector (reconcile.LabelSelected).
func (k *kind) ParentSelector(res int) labels.Selector { return k.targets[res].labels }

func (k *kind) Selects(res int, obj *unstructured.Unstructured) bool {
	t := k.targets[res]
	if !t.labels.Matches(selector.Labels(obj)) {
		return false
	}
	return t.annotations == nil || t.annotations.matches(obj.GetAnnotations())
}

func (k *kind) Claimant(obj *unstructured.Unstructured) (claim.Parent, error) {
	p := claim.ParentOf(obj, nil)
	p.Mark = k.mark
	return p, nil
}

// owns accepts only attachments this decorator made: the target's other children (another
// decorator's, or its own controller's) concern this decorator not at all.
func (k *kind) owns(child *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedFieldNoCopy(child.Object, "metadata", "annotations", k.mark.Key)
	return v == k.mark.Value
}
