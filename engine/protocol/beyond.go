package protocol

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/claim"
)

// labelBeyond labels obj, an object of rule at path, when it is beyond its namespaced
// parent's namespace and the rule lets it be (ChildRule.Beyond): claim.ParentUIDLabel names
// the parent and the rule's mark the controller, the labels the parent claims it by. A hook
// that sets either label to another value is refused: it would hand the object to another
// parent or controller.
func labelBeyond(path string, obj, parent *unstructured.Unstructured, rule ChildRule) error {
	if rule.Beyond == nil || !claim.Outside(parent.GetNamespace(), obj.GetNamespace()) {
		return nil
	}
	uid := string(parent.GetUID())
	if v, ok := obj.GetLabels()[claim.ParentUIDLabel]; ok && v != uid {
		return Invalid(path+".metadata.labels."+claim.ParentUIDLabel, "%q names another parent; the engine sets it to the parent's UID %q", v, uid)
	}
	if err := stampMark(path, obj, rule.Beyond); err != nil {
		return err
	}
	SetStrings(obj, "labels", map[string]string{claim.ParentUIDLabel: uid})
	return nil
}

// confinedBy says, for the refusal of an object outside the parent's namespace, which kind
// confines the rule, if one does.
func confinedBy(rule ChildRule) string {
	if rule.Confined == "" {
		return ""
	}
	return "; a " + rule.Confined + " is confined to its namespace"
}
