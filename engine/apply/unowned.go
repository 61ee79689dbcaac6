package apply

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NoOwner, given as the owner to Plan, PlanInto, Apply or UpToDate, writes a child without an
// owner reference: a child beyond its parent's namespace, which an owner reference cannot
// reach and the engine claims by label instead (engine/claim). Its configuration keeps the
// owner references the hook listed, if any, and adds none; an observed child with a
// ControllerRef is another's (ErrNotOwned), as for any owner.
var NoOwner = metav1.OwnerReference{UID: noOwnerUID}

// noOwnerUID is no object's UID: the API server makes UUIDs.
const noOwnerUID = "metascript.dev/no-owner"

// unowned reports whether owner is NoOwner.
func unowned(owner *metav1.OwnerReference) bool {
	return owner.UID == noOwnerUID && owner.Name == "" && owner.Kind == ""
}
