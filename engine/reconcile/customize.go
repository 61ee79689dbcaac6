package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/related"
)

// CustomizeRequest is the customize hook's request: the controller resource and the parent,
// the same for every kind.
func CustomizeRequest(controller, parent map[string]any) map[string]any {
	return map[string]any{"controller": controller, "parent": parent}
}

// relatedOf returns the parent's related rules and the request's related map. Without a
// customize hook both are empty. With one, the tracker reuses the hook's last answer while
// the parent's fingerprint stands, and the hook is called otherwise; a failure of the hook
// (reported like any hook's) or an invalid answer (reported here) stops the reconcile before
// anything is written, and so does a rule naming objects the controller's account may not
// read (reported as ReadRefused), before their informers start. The informers of the
// resources the rules name are started here.
func (r *Runner) relatedOf(ctx context.Context, parent *unstructured.Unstructured) ([]related.Rule, map[string]any, error) {
	if r.related == nil {
		return nil, map[string]any{}, nil
	}
	rules, err := r.related.Rules(parent, r.programOf(ctx).Revision, func() (map[string]any, error) {
		return r.invoke(ctx, "customize", "", CustomizeRequest(r.built.Object, parent.Object), parent)
	})
	if err == nil {
		err = r.confineRules(rules)
	}
	if err != nil {
		r.reject(ctx, parent, "customize", "", err)
		return nil, nil, err
	}
	if err := r.checkRelated(ctx, rules); err != nil {
		if !quiet(ctx) {
			r.warn(parent, "ReadRefused", err)
		}
		return nil, nil, err
	}
	objects, err := r.related.Objects(ctx, parent, rules)
	if err != nil {
		return nil, nil, err
	}
	return rules, objects, nil
}

// RelatedReach is how far the related rules of controller b's namespaced parents may select:
// beyond the parent's namespace when its customize hook and its primary hook are both of
// version v2 (as the reference allows for v2 customize hooks; the primary hook must key
// namespaced objects namespace/name, or objects of two namespaces with one name would
// collide), and never for a controller of a namespaced kind, confined to its namespace.
func RelatedReach(b *Built) related.Reach {
	v2 := func(hook string) bool { return HookVersion(b.Declared.Hooks[hook]) == v1alpha1.HookVersionV2 }
	if !b.Descriptor.Namespaced && v2(CustomizeHook.Name) && v2(b.Descriptor.Primary().Name) {
		return related.AnyNamespace
	}
	return related.OwnNamespace
}
