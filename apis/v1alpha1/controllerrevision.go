package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ControllerRevision records one revision of a CompositeController parent for rolling
// updates: the parent's values at the controller's revisionHistory.fieldPaths, and which of
// the parent's children belong to it. The engine writes revisions, owned by their parent (a
// ControllerRef), so that a rollout survives an engine restart exactly where it was; users
// read them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=crev,categories=metascript
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ControllerRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Revision orders the revisions of one parent: the highest is the newest, which new
	// children and the rollout move to.
	Revision int64 `json:"revision"`
	// ParentPatch holds the parent's values at the rolling field paths in this revision,
	// e.g. {"spec": {"template": ...}}.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	ParentPatch runtime.RawExtension `json:"parentPatch"`
	// Children lists, by group and kind, the children that belong to this revision.
	// +optional
	// +listType=atomic
	Children []ControllerRevisionChildren `json:"children,omitempty"`
}

// ControllerRevisionChildren names the children of one group and kind in a revision.
type ControllerRevisionChildren struct {
	// APIGroup is empty for the core group.
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	// +listType=atomic
	Names []string `json:"names"`
}

// ControllerRevisionList is a list of ControllerRevisions.
//
// +kubebuilder:object:root=true
type ControllerRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControllerRevision `json:"items"`
}
