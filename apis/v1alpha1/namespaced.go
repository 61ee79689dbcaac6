package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The namespaced controller kinds are for tenants without cluster rights. Each has the spec
// of its cluster-scoped twin and is confined to its own namespace: its parents, children,
// attachments, outputs, related objects and inputs are objects of namespaced resources in
// that namespace, and every write made for it impersonates a ServiceAccount of that
// namespace ("default" unless spec.serviceAccount.name says otherwise).

// NamespacedCompositeController is a CompositeController confined to its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=ncc,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentResource.resource`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="HooksCompiled")].status`
// +kubebuilder:printcolumn:name="Parents",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedCompositeController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CompositeControllerSpec `json:"spec"`
	// +optional
	Status ControllerStatus `json:"status,omitempty"`
}

// NamespacedCompositeControllerList is a list of NamespacedCompositeControllers.
//
// +kubebuilder:object:root=true
type NamespacedCompositeControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedCompositeController `json:"items"`
}

// NamespacedDecoratorController is a DecoratorController confined to its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=ndec,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="HooksCompiled")].status`
// +kubebuilder:printcolumn:name="Targets",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Attachments",type=integer,JSONPath=`.status.children`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedDecoratorController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DecoratorControllerSpec `json:"spec"`
	// +optional
	Status ControllerStatus `json:"status,omitempty"`
}

// NamespacedDecoratorControllerList is a list of NamespacedDecoratorControllers.
//
// +kubebuilder:object:root=true
type NamespacedDecoratorControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedDecoratorController `json:"items"`
}

// NamespacedMapController is a MapController confined to its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=nmc,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentResource.resource`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="HooksCompiled")].status`
// +kubebuilder:printcolumn:name="Parents",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Outputs",type=integer,JSONPath=`.status.children`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedMapController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MapControllerSpec `json:"spec"`
	// +optional
	Status ControllerStatus `json:"status,omitempty"`
}

// NamespacedMapControllerList is a list of NamespacedMapControllers.
//
// +kubebuilder:object:root=true
type NamespacedMapControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedMapController `json:"items"`
}
