package reconcile

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/related"
)

// A controller of a namespaced kind (Declared.Namespace set) is confined to its namespace,
// whatever its hooks return. Three gates hold it there:
//   - New refuses a cluster-scoped parent, child or input resource, so that every object the
//     controller reads or writes is namespaced;
//   - enqueue drops every request naming a parent in another namespace, whichever route it
//     came by, and reconcile checks again; a parent's children, attachments and outputs are
//     in the parent's namespace (engine/protocol refuses any other), and a MapController's
//     inputs are read from it;
//   - a customize answer naming a cluster-scoped resource is refused; the related rules of a
//     namespaced parent select in its own namespace only (engine/related).

// confineResources refuses a namespaced controller that names a cluster-scoped resource.
func confineResources(b *Built) error {
	for i, res := range b.Resources {
		if !res.Namespaced {
			return fmt.Errorf("%s: %s is cluster-scoped; a %s is confined to its namespace %q and reads and writes namespaced resources only",
				b.Declared.Resources[i].Field, res.GVR.GroupResource(), b.Descriptor.Kind, b.Namespace)
		}
	}
	return nil
}

// outside reports whether req names a parent outside the controller's namespace: never for a
// controller of a cluster-scoped kind.
func (r *Runner) outside(req Request) bool {
	if r.built.Namespace == "" {
		return false
	}
	ns, _, err := cache.SplitMetaNamespaceKey(req.Key)
	return err != nil || ns != r.built.Namespace
}

// confineRules refuses related rules that reach beyond a namespaced controller's namespace:
// a cluster-scoped resource. The error is a *protocol.InvalidResponseError.
func (r *Runner) confineRules(rules []related.Rule) error {
	if r.built.Namespace == "" {
		return nil
	}
	for i, rule := range rules {
		if !rule.Resource.Namespaced {
			return protocol.Invalid(fmt.Sprintf("relatedResources[%d]", i),
				"%s is cluster-scoped; a %s is confined to its namespace %q", rule.Resource.GVR.GroupResource(), r.built.Descriptor.Kind, r.built.Namespace)
		}
	}
	return nil
}

// parentKeys lists the cache keys of the parents of resource res the controller may reach:
// every cached one, or those of its namespace when it is confined.
func (r *Runner) parentKeys(res int) []string {
	idx := r.parents[res].informer.Indexer()
	if ns := r.built.Namespace; ns != "" {
		keys, _ := idx.IndexKeys(cache.NamespaceIndex, ns)
		return keys
	}
	return idx.ListKeys()
}
