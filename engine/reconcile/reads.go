package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/related"
)

// checkReads refuses, before any hook of the parent is called, to hand the hooks what the
// controller's account (Env.Reads) may not read: the parent itself (get), and the objects of
// its child and input resources where the parent's are (list: in its namespace, or across
// the cluster under a cluster-scoped parent or for cluster-scoped resources). Without
// Env.Reads every read is the engine's.
func (r *Runner) checkReads(ctx context.Context, res int, parent *unstructured.Unstructured) error {
	if r.cfg.Reads == nil {
		return nil
	}
	ns := parent.GetNamespace()
	if err := r.cfg.Reads.MayRead(ctx, "get", r.parents[res].GVR, ns); err != nil {
		return err
	}
	for _, c := range r.children {
		if err := r.cfg.Reads.MayRead(ctx, "list", c.GVR, scoped(c.Namespaced, ns)); err != nil {
			return err
		}
	}
	for _, in := range r.cfg.Watches.Inputs {
		if err := r.cfg.Reads.MayRead(ctx, "list", in.GVR, scoped(in.Namespaced, ns)); err != nil {
			return err
		}
	}
	return nil
}

// checkRelated is checkReads for the objects a customize answer's rules select: each rule's
// resource where the rule looks (list), and Namespaces for a rule selecting namespaces by
// their labels.
func (r *Runner) checkRelated(ctx context.Context, rules []related.Rule) error {
	if r.cfg.Reads == nil {
		return nil
	}
	for _, rule := range rules {
		if err := r.cfg.Reads.MayRead(ctx, "list", rule.Resource.GVR, scoped(rule.Resource.Namespaced, rule.Namespace)); err != nil {
			return err
		}
		if rule.NamespaceSelector != nil {
			if err := r.cfg.Reads.MayRead(ctx, "list", related.Namespaces.GVR, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// scoped is the namespace a read of a resource is in: ns for a namespaced one, the whole
// cluster for a cluster-scoped one.
func scoped(namespaced bool, ns string) string {
	if namespaced {
		return ns
	}
	return ""
}
