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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// Annotations and finalizers the engine writes.
const (
	// MarkAnnotation holds the name of the decorator that made an attachment.
	MarkAnnotation = "metascript.dev/decorator-controller"
	// FinalizerPrefix + controller name is the finalizer held while a finalize hook exists.
	FinalizerPrefix = "metascript.dev/decoratorcontroller-"
)

// Spec is one DecoratorController, resolved and compiled.
type Spec struct {
	Controller *v1alpha1.DecoratorController
	// ControllerObject is the controller resource as hooks see it (request.controller).
	ControllerObject map[string]any
	// Targets and Attachments are spec.resources and spec.attachments, resolved, in order.
	Targets, Attachments []resources.Resource
	// Hooks by name: sync (required), finalize and customize.
	Hooks map[string]hooks.Invoker
}

// New validates spec and returns the controller's Runner, not started yet.
func New(spec Spec, env reconcile.Env) (*reconcile.Runner, error) {
	dc := spec.Controller
	k := &kind{
		controller:  spec.ControllerObject,
		name:        dc.Name,
		mark:        &claim.Mark{Key: MarkAnnotation, Value: dc.Name},
		record:      apply.DecorationRecord(dc.Name),
		hookVersion: v1alpha1.HookVersionV1,
	}
	if h := dc.Spec.Hooks; h != nil && h.Sync != nil && h.Sync.Version != "" {
		k.hookVersion = h.Sync.Version
	}
	for i, res := range spec.Targets {
		rule := dc.Spec.Resources[i]
		t := target{ParentResource: reconcile.ParentResource{Resource: res}, labels: labels.Everything()}
		if rule.IgnoreStatusChanges != nil {
			t.IgnoreStatusChanges = *rule.IgnoreStatusChanges
		}
		if rule.LabelSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(rule.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("spec.resources[%d].labelSelector: %w", i, err)
			}
			t.labels = sel
		}
		if as := rule.AnnotationSelector; as != nil {
			sel, err := newAnnotationSelector(as)
			if err != nil {
				return nil, fmt.Errorf("spec.resources[%d].annotationSelector: %w", i, err)
			}
			t.annotations = sel
		}
		k.targets = append(k.targets, t)
	}
	for i, res := range spec.Attachments {
		method := v1alpha1.ChildUpdateOnDelete
		if us := dc.Spec.Attachments[i].UpdateStrategy; us != nil && us.Method != "" {
			method = v1alpha1.ChildUpdateMethod(us.Method)
		}
		switch method {
		case v1alpha1.ChildUpdateOnDelete, v1alpha1.ChildUpdateRecreate, v1alpha1.ChildUpdateInPlace:
		default:
			return nil, fmt.Errorf("spec.attachments[%d].updateStrategy.method: %q is not one of OnDelete, Recreate, InPlace", i, method)
		}
		for j, t := range spec.Targets {
			if t.Namespaced && !res.Namespaced {
				return nil, fmt.Errorf("spec.attachments[%d]: %s is cluster-scoped but the target resource %s (spec.resources[%d]) is namespaced",
					i, res.GVR.Resource, t.GVR.Resource, j)
			}
		}
		k.rules = append(k.rules, reconcile.ChildRule{Resource: res, Method: method})
	}
	var resync time.Duration
	if p := dc.Spec.ResyncPeriodSeconds; p != nil && *p > 0 {
		resync = time.Duration(*p) * time.Second
	}
	parents := make([]reconcile.ParentResource, len(k.targets))
	for i, t := range k.targets {
		parents[i] = t.ParentResource
	}
	fieldManager := apply.FieldManager("decorator/" + dc.Name)
	k.applier = apply.NewWithManager(env.Client, fieldManager)
	return reconcile.New(reconcile.Config{
		Env:                env,
		ControllerObject:   spec.ControllerObject,
		HookVersion:        k.hookVersion,
		Name:               "decoratorcontroller/" + dc.Name,
		Kind:               k,
		FieldManager:       fieldManager,
		Finalizer:          FinalizerPrefix + dc.Name,
		FinalizeDeselected: true,
		Parents:            parents,
		Children:           k.rules,
		Hooks:              spec.Hooks,
		ResyncPeriod:       resync,
	})
}

// target is one rule of spec.resources.
type target struct {
	reconcile.ParentResource
	labels      labels.Selector
	annotations *annotationSelector // nil selects everything
}

// kind implements reconcile.Kind and reconcile.ChildFilter.
type kind struct {
	controller  map[string]any
	name        string
	targets     []target
	rules       []reconcile.ChildRule
	mark        *claim.Mark
	record      string // annotation key of what was applied to a target
	hookVersion v1alpha1.HookVersion
	applier     *apply.Applier
}

func (k *kind) Selects(res int, obj *unstructured.Unstructured) bool {
	t := k.targets[res]
	if !t.labels.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	return t.annotations == nil || t.annotations.matches(obj.GetAnnotations())
}

func (k *kind) Claimant(obj *unstructured.Unstructured) (claim.Parent, error) {
	p := claim.ParentOf(obj, nil)
	p.Mark = k.mark
	return p, nil
}

// RoutesChild accepts only attachments this decorator made: the target's other children
// (another decorator's, or its own controller's) concern this decorator not at all.
func (k *kind) RoutesChild(child *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedFieldNoCopy(child.Object, "metadata", "annotations", k.mark.Key)
	return v == k.mark.Value
}
