package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DecoratorController declares a controller that adds behaviour to objects someone else
// controls: for each target it sets labels, annotations and status, and keeps attachments
// (objects owned by the target). The field set is Metacontroller's; hooks gain inline forms.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=dec;decorators,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="HooksCompiled")].status`
// +kubebuilder:printcolumn:name="Targets",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Attachments",type=integer,JSONPath=`.status.children`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DecoratorController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DecoratorControllerSpec `json:"spec"`
	// +optional
	Status ControllerStatus `json:"status,omitempty"`
}

// DecoratorControllerSpec is the desired behaviour of a DecoratorController.
type DecoratorControllerSpec struct {
	// Resources are the rules choosing the target objects: every object of one of these
	// resources that satisfies its rule's selectors is decorated.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Resources []DecoratorControllerResourceRule `json:"resources"`
	// Attachments lists every resource the hooks may return as attachments.
	// +optional
	// +listType=atomic
	Attachments []DecoratorControllerAttachmentRule `json:"attachments,omitempty"`
	// ResyncPeriodSeconds resyncs every target this often, even when nothing changed.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ResyncPeriodSeconds *int32 `json:"resyncPeriodSeconds,omitempty"`
	// ServiceAccount is the account every write made for this controller impersonates;
	// without it the engine writes with its own account. On a namespaced controller kind it
	// names an account of the controller's own namespace and defaults to "default".
	// +optional
	ServiceAccount *ServiceAccountReference `json:"serviceAccount,omitempty"`
	// Isolation says where the controller's inline hooks run; default InProcess.
	// +optional
	Isolation Isolation `json:"isolation,omitempty"`
	// Script is helper code shared by the hooks of this controller.
	// +optional
	Script *SharedScript `json:"script,omitempty"`
	// HookRollout stages a change of the hooks across the parents; unset, a changed hook
	// reaches every parent at once.
	// +optional
	HookRollout *HookRolloutPolicy `json:"hookRollout,omitempty"`
	// Hooks say how to call sync, finalize and customize.
	// +optional
	Hooks *DecoratorControllerHooks `json:"hooks,omitempty"`
	// EndpointConfigs give connection settings (CA bundle, credentials, client certificate)
	// by host, to every webhook hook of this controller whose host matches an entry and
	// that sets none of these fields itself.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	EndpointConfigs []EndpointConfig `json:"endpointConfigs,omitempty"`
}

// DecoratorControllerResourceRule chooses target objects of one resource.
type DecoratorControllerResourceRule struct {
	ResourceRule `json:",inline"`
	// LabelSelector narrows the targets to objects whose labels satisfy it.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// AnnotationSelector narrows the targets to objects whose annotations satisfy it.
	// +optional
	AnnotationSelector *AnnotationSelector `json:"annotationSelector,omitempty"`
	// IgnoreStatusChanges syncs a target only on changes other than its status.
	// +optional
	IgnoreStatusChanges *bool `json:"ignoreStatusChanges,omitempty"`
}

// AnnotationSelector is a label selector over annotations: matchAnnotations instead of
// matchLabels, and the same matchExpressions.
type AnnotationSelector struct {
	// +optional
	MatchAnnotations map[string]string `json:"matchAnnotations,omitempty"`
	// +optional
	// +listType=atomic
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// DecoratorControllerAttachmentRule declares an attachment resource and how existing
// attachments are updated.
type DecoratorControllerAttachmentRule struct {
	ResourceRule `json:",inline"`
	// UpdateStrategy defaults to OnDelete: existing attachments are never updated.
	// +optional
	UpdateStrategy *BasicUpdateStrategy `json:"updateStrategy,omitempty"`
}

// BasicUpdateStrategy says how objects that differ from the desired state are updated, for
// kinds without rolling updates (attachments, outputs). Rolling updates are a
// CompositeController's: attach or output one.
type BasicUpdateStrategy struct {
	// +optional
	Method BasicUpdateMethod `json:"method,omitempty"`
}

// BasicUpdateMethod is a ChildUpdateMethod without the rolling ones.
// +kubebuilder:validation:Enum=OnDelete;Recreate;InPlace
type BasicUpdateMethod string

// DecoratorControllerHooks are the hooks of a DecoratorController.
type DecoratorControllerHooks struct {
	// Sync returns the desired labels, annotations, status and attachments of a target.
	// +optional
	Sync *Hook `json:"sync,omitempty"`
	// Finalize is called instead of sync while a target is being deleted, or once it no
	// longer matches the selectors; a finalizer holds the target until it answers
	// finalized: true.
	// +optional
	Finalize *Hook `json:"finalize,omitempty"`
	// Customize returns the related objects a target's sync should see.
	// +optional
	Customize *Hook `json:"customize,omitempty"`
}

// DecoratorControllerList is a list of DecoratorControllers.
//
// +kubebuilder:object:root=true
type DecoratorControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DecoratorController `json:"items"`
}
