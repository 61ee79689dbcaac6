package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/resources"
)

// How a controller's spec becomes the shared configuration: the rules every kind reads the
// same way, each written once. Errors name the field at fault.

// LabelSelector parses the label selector at field; nil selects everything.
func LabelSelector(field string, ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return sel, nil
}

// ResyncPeriod is resyncPeriodSeconds as a duration; zero when unset or not positive.
func ResyncPeriod(seconds *int32) time.Duration {
	if seconds == nil || *seconds <= 0 {
		return 0
	}
	return time.Duration(*seconds) * time.Second
}

// Flag is an optional boolean of a spec; false when unset.
func Flag(b *bool) bool { return b != nil && *b }

// BasicMethods are the update methods of attachments and outputs.
var BasicMethods = []v1alpha1.ChildUpdateMethod{
	v1alpha1.ChildUpdateOnDelete, v1alpha1.ChildUpdateRecreate, v1alpha1.ChildUpdateInPlace}

// UpdateMethod is the update method at field (…updateStrategy.method): OnDelete when empty,
// and one of allowed otherwise.
func UpdateMethod(field string, method v1alpha1.ChildUpdateMethod, allowed []v1alpha1.ChildUpdateMethod) (v1alpha1.ChildUpdateMethod, error) {
	if method == "" {
		return v1alpha1.ChildUpdateOnDelete, nil
	}
	if !slices.Contains(allowed, method) {
		names := make([]string, len(allowed))
		for i, m := range allowed {
			names[i] = string(m)
		}
		return "", fmt.Errorf("%s: %q is not one of %s", field, method, strings.Join(names, ", "))
	}
	return method, nil
}

// CheckScope refuses a cluster-scoped resource (field) written or read for a namespaced
// parent resource (parentField): an owner reference cannot cross scopes that way.
func CheckScope(field string, res resources.Resource, parentField string, parent resources.Resource) error {
	if parent.Namespaced && !res.Namespaced {
		return fmt.Errorf("%s: %s is cluster-scoped but the parent resource %s (%s) is namespaced",
			field, res.GVR.Resource, parent.GVR.Resource, parentField)
	}
	return nil
}

// HookVersion is the request-key version a hook asks for: v1 unless it says v2.
func HookVersion(h *v1alpha1.Hook) v1alpha1.HookVersion {
	if h != nil && h.Version != "" {
		return h.Version
	}
	return v1alpha1.HookVersionV1
}
