package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MapController declares a controller that, for every input object matching a parent's
// selector, keeps the outputs its map hook asks for, owned by the parent: "for every
// matching X, keep these Ys".
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mc;mcs,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentResource.resource`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="HooksCompiled")].status`
// +kubebuilder:printcolumn:name="Parents",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Outputs",type=integer,JSONPath=`.status.children`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MapController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MapControllerSpec `json:"spec"`
	// +optional
	Status ControllerStatus `json:"status,omitempty"`
}

// MapControllerSpec is the desired behaviour of a MapController.
type MapControllerSpec struct {
	// ParentResource is the resource whose objects hold the parameters and own the outputs.
	// Each parent's duck-typed spec.selector chooses its inputs.
	ParentResource MapParentResourceRule `json:"parentResource"`
	// InputResources are the resources whose objects are mapped, each on its own.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	InputResources []ResourceRule `json:"inputResources"`
	// OutputResources lists every resource the map hook may return.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	OutputResources []MapOutputResourceRule `json:"outputResources"`
	// ResyncPeriodSeconds calls the map hook for every input this often, even when nothing
	// changed.
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
	// Hooks say how to call map and tombstone.
	// +optional
	Hooks *MapControllerHooks `json:"hooks,omitempty"`
	// EndpointConfigs give connection settings (CA bundle, credentials, client certificate)
	// by host, to every webhook hook of this controller whose host matches an entry and
	// that sets none of these fields itself.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	EndpointConfigs []EndpointConfig `json:"endpointConfigs,omitempty"`
}

// MapParentResourceRule selects the parent resource.
type MapParentResourceRule struct {
	ResourceRule `json:",inline"`
	// LabelSelector narrows the parents this controller reconciles; all when unset.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// IgnoreStatusChanges reconciles a parent only on changes other than its status.
	// +optional
	IgnoreStatusChanges *bool `json:"ignoreStatusChanges,omitempty"`
}

// MapOutputResourceRule declares an output resource and how existing outputs are updated.
type MapOutputResourceRule struct {
	ResourceRule `json:",inline"`
	// UpdateStrategy defaults to OnDelete: existing outputs are never updated.
	// +optional
	UpdateStrategy *BasicUpdateStrategy `json:"updateStrategy,omitempty"`
}

// MapControllerHooks are the hooks of a MapController.
type MapControllerHooks struct {
	// Map returns the desired outputs of one input.
	// +optional
	Map *Hook `json:"map,omitempty"`
	// Tombstone is given the outputs of an input that is gone and returns those to keep;
	// without it they are deleted.
	// +optional
	Tombstone *Hook `json:"tombstone,omitempty"`
}

// MapControllerList is a list of MapControllers.
//
// +kubebuilder:object:root=true
type MapControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MapController `json:"items"`
}
