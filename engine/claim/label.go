package claim

import "k8s.io/apimachinery/pkg/types"

// Children beyond a namespaced parent's namespace (a Namespace, a ClusterRole, a RoleBinding
// in another namespace) cannot carry an owner reference to it: the API server's garbage
// collector resolves owner references within the dependent's namespace only. A parent that
// may have such children claims them by label instead (Parent.Beyond):
//
//	child's ControllerRef   ParentUIDLabel      carries the mark   decision
//	any                     any                 any                Ignore   (someone's child: an owner reference cannot cross namespaces)
//	none                    this parent         yes                Keep
//	none                    this parent         no                 Ignore   (another controller's child of this parent)
//	none                    other, or absent    any                Ignore   (not made for this parent: never adopted)
//
// A parent never adopts by label and never releases what it claims by label: adopting would
// take over an object the engine did not create (one of the same name that someone else made
// is never touched), and releasing would need a write that removes the labels, which no rule
// asks for. Whether the parent or the child is being deleted does not matter: a deleting
// parent keeps its labelled children so that the engine can delete them itself (the garbage
// collector cannot), and a deleting child is counted until it is gone.
//
// In the ControllerRef table, an orphan carrying ParentUIDLabel is ignored too: it is some
// parent's child, claimed by label, and no selector adopts it.

// ParentUIDLabel holds the UID of the parent a child beyond the parent's namespace belongs to.
const ParentUIDLabel = "metascript.dev/parent-uid"

// Outside reports whether a child in childNamespace ("" when cluster-scoped) is beyond a parent
// in parentNamespace ("" when cluster-scoped): the parent is namespaced and the child is not
// in its namespace. A cluster-scoped parent can own children of either scope anywhere.
func Outside(parentNamespace, childNamespace string) bool {
	return parentNamespace != "" && childNamespace != parentNamespace
}

// decideByLabel is the label table for a child outside a parent that claims beyond its
// namespace.
func decideByLabel(parent Parent, child Child) Decision {
	if _, controlled := child.controller(); controlled {
		return Ignore
	}
	if uid, ok := lookup(child.Labels, ParentUIDLabel); !ok || types.UID(uid) != parent.UID || parent.UID == "" {
		return Ignore
	}
	if !parent.Beyond.on(child) {
		return Ignore
	}
	return Keep
}

// labelled reports whether an orphan carries ParentUIDLabel: a child some parent claims by
// label.
func (c Child) labelled() bool {
	_, ok := lookup(c.Labels, ParentUIDLabel)
	return ok
}
