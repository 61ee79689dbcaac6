package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CompositeController declares a controller that manages a set of child objects for each
// object of a parent resource. The field set is Metacontroller's; hooks gain inline forms.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cc;ccs,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentResource.resource`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="HooksCompiled")].status`
// +kubebuilder:printcolumn:name="Parents",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CompositeController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CompositeControllerSpec `json:"spec"`
	// +optional
	Status ControllerStatus `json:"status,omitempty"`
}

// CompositeControllerSpec is the desired behaviour of a CompositeController.
type CompositeControllerSpec struct {
	// ParentResource is the resource whose objects this controller reconciles.
	ParentResource ParentResourceRule `json:"parentResource"`
	// ChildResources lists every resource the hooks may return as children.
	// +optional
	// +listType=atomic
	ChildResources []ChildResourceRule `json:"childResources,omitempty"`
	// ResyncPeriodSeconds resyncs every parent this often, even when nothing changed.
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
	// GenerateSelector ignores each parent's spec.selector and manages children through a
	// label holding the parent's UID instead.
	// +optional
	GenerateSelector *bool `json:"generateSelector,omitempty"`
	// Script is helper code shared by the hooks of this controller.
	// +optional
	Script *SharedScript `json:"script,omitempty"`
	// HookRollout stages a change of the hooks across the parents; unset, a changed hook
	// reaches every parent at once.
	// +optional
	HookRollout *HookRolloutPolicy `json:"hookRollout,omitempty"`
	// Hooks say how to call sync, finalize and customize.
	// +optional
	Hooks *CompositeControllerHooks `json:"hooks,omitempty"`
	// EndpointConfigs give connection settings (CA bundle, credentials, client certificate)
	// by host, to every webhook hook of this controller whose host matches an entry and
	// that sets none of these fields itself.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	EndpointConfigs []EndpointConfig `json:"endpointConfigs,omitempty"`
}

// ResourceRule names a resource by API group/version and plural resource name.
type ResourceRule struct {
	// APIVersion is <group>/<version>, or <version> for the core group.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Resource is the lowercase plural name, e.g. configmaps.
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
}

// ParentResourceRule selects the parent resource.
type ParentResourceRule struct {
	ResourceRule `json:",inline"`
	// LabelSelector narrows the parents this controller reconciles; all when unset.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// RevisionHistory says which parent fields trigger rolling updates.
	// +optional
	RevisionHistory *RevisionHistory `json:"revisionHistory,omitempty"`
	// IgnoreStatusChanges reconciles a parent only on changes other than its status.
	// +optional
	IgnoreStatusChanges *bool `json:"ignoreStatusChanges,omitempty"`
}

// RevisionHistory lists the parent field paths that trigger rolling updates.
type RevisionHistory struct {
	// FieldPaths defaults to ["spec"].
	// +optional
	// +listType=atomic
	FieldPaths []string `json:"fieldPaths,omitempty"`
}

// ChildResourceRule declares a child resource and how existing children are updated.
type ChildResourceRule struct {
	ResourceRule `json:",inline"`
	// UpdateStrategy defaults to OnDelete.
	// +optional
	UpdateStrategy *ChildUpdateStrategy `json:"updateStrategy,omitempty"`
}

// ChildUpdateMethod says how children that differ from the desired state are updated.
// +kubebuilder:validation:Enum=OnDelete;Recreate;InPlace;RollingRecreate;RollingInPlace
type ChildUpdateMethod string

const (
	ChildUpdateOnDelete        ChildUpdateMethod = "OnDelete"
	ChildUpdateRecreate        ChildUpdateMethod = "Recreate"
	ChildUpdateInPlace         ChildUpdateMethod = "InPlace"
	ChildUpdateRollingRecreate ChildUpdateMethod = "RollingRecreate"
	ChildUpdateRollingInPlace  ChildUpdateMethod = "RollingInPlace"
)

// ChildUpdateStrategy is the update method and, for rolling methods, the status checks.
type ChildUpdateStrategy struct {
	// +optional
	Method ChildUpdateMethod `json:"method,omitempty"`
	// +optional
	StatusChecks *ChildUpdateStatusChecks `json:"statusChecks,omitempty"`
}

// ChildUpdateStatusChecks must all pass on updated children before a rollout continues.
type ChildUpdateStatusChecks struct {
	// +optional
	// +listType=atomic
	Conditions []StatusConditionCheck `json:"conditions,omitempty"`
}

// StatusConditionCheck requires a status condition of the given type, and optionally status
// and reason.
type StatusConditionCheck struct {
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// +optional
	Status *string `json:"status,omitempty"`
	// +optional
	Reason *string `json:"reason,omitempty"`
}

// CompositeControllerHooks are the hooks of a CompositeController.
type CompositeControllerHooks struct {
	// Sync returns the desired children and status of a parent.
	// +optional
	Sync *Hook `json:"sync,omitempty"`
	// Finalize is called instead of sync while a parent is being deleted; a finalizer holds
	// the parent until it answers finalized: true.
	// +optional
	Finalize *Hook `json:"finalize,omitempty"`
	// Customize returns the related objects a parent's sync should see.
	// +optional
	Customize *Hook `json:"customize,omitempty"`
}

// ControllerStatus is the observed state of a controller resource.
type ControllerStatus struct {
	// ObservedGeneration is the generation the engine last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: HooksCompiled (with compile errors and their positions), Ready and
	// BudgetsCapped.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Parents is how many parent objects the controller currently watches.
	// +optional
	Parents int32 `json:"parents,omitempty"`
	// Children is how many children those parents own.
	// +optional
	Children int32 `json:"children,omitempty"`
	// Members is how many engine replicas share the controller's parents (metascript run
	// --sharding); unset when one engine reconciles them all.
	// +optional
	Members int32 `json:"members,omitempty"`
	// HookRollout is where a staged change of the hooks stands (spec.hookRollout).
	// +optional
	HookRollout *HookRolloutStatus `json:"hookRollout,omitempty"`
}

// Condition types of ControllerStatus.
const (
	ConditionReady         = "Ready"
	ConditionHooksCompiled = "HooksCompiled"
	// ConditionBudgetsCapped is True when a hook asks for a budget above the engine's
	// ceilings, naming each such field; the ceiling applies instead.
	ConditionBudgetsCapped = "BudgetsCapped"
)

// CompositeControllerList is a list of CompositeControllers.
//
// +kubebuilder:object:root=true
type CompositeControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CompositeController `json:"items"`
}
