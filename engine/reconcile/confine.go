package reconcile

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"

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
	idx := r.parents[res].indexer
	if ns := r.built.Namespace; ns != "" {
		keys, _ := idx.IndexKeys(cache.NamespaceIndex, ns)
		return keys
	}
	return idx.ListKeys()
}

// ServiceAccount is the account a controller's writes impersonate: spec.serviceAccount, whose
// namespace a cluster-scoped kind requires; a namespaced kind's controller always has one, of
// its own namespace ("default" unless named). nil: the engine's own account. The error names
// the field at fault. The manager builds with it and admission checks with it, so that both
// refuse alike.
func ServiceAccount(kind *Descriptor, decl *Declared) (*v1alpha1.ServiceAccountReference, error) {
	sa := decl.ServiceAccount
	if !kind.Namespaced {
		if sa != nil && sa.Namespace == "" {
			return nil, errors.New("spec.serviceAccount.namespace is required on a " + kind.Kind)
		}
		return sa, nil
	}
	name := "default"
	if sa != nil {
		if sa.Namespace != "" && sa.Namespace != decl.Namespace {
			return nil, fmt.Errorf("spec.serviceAccount.namespace: %q is not the controller's namespace %q; a %s acts as an account of its own namespace",
				sa.Namespace, decl.Namespace, kind.Kind)
		}
		name = sa.Name
	}
	return &v1alpha1.ServiceAccountReference{Namespace: decl.Namespace, Name: name}, nil
}

// ReferenceNamespace returns the namespace a controller's reference to a ConfigMap or Secret
// (kind, namespace/name) reads from, or why it may not. confined is the namespace of a
// namespaced controller, empty for a cluster-scoped one: a confined controller's reference
// without a namespace means its own, and one naming another is refused, so that a tenant
// cannot have the engine read, or send to its own webhook, another namespace's Secret.
func ReferenceNamespace(confined, kind, namespace, name string) (string, error) {
	switch {
	case confined == "":
		return namespace, nil
	case namespace == "" || namespace == confined:
		return confined, nil
	}
	return "", fmt.Errorf("%s %s/%s: a namespaced controller refers to objects of its own namespace %q only", kind, namespace, name, confined)
}
