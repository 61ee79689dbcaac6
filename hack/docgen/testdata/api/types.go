// Package api is a fixture of the docgen tests: types shaped as apis/v1alpha1's are.
package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// WidgetSpec is the desired state of a Widget.
//
// +kubebuilder:validation:XValidation:rule="has(self.size)",message="size must be set"
type WidgetSpec struct {
	Named `json:",inline"`
	// Size is how big it is, in <unit>s.
	// +kubebuilder:validation:Minimum=1
	Size int32 `json:"size"`
	// Mode picks a behaviour; default Quiet.
	// +optional
	Mode Mode `json:"mode,omitempty"`
	// Parts lists its parts | in order.
	// +optional
	Parts []Part `json:"parts,omitempty"`
	// Selector chooses objects.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Labels to set.
	Labels map[string]string `json:"labels,omitempty"`
	Hidden string            `json:"-"`
}

// Named names a thing.
type Named struct {
	// Name must be set.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Mode says how a Widget behaves.
// +kubebuilder:validation:Enum=Quiet;Loud
type Mode string

// Part is one part of a Widget.
type Part struct {
	// Count defaults to 3.
	// +optional
	Count *int64 `json:"count,omitempty"`
	// Unlisted is a type that no page has a table of.
	// +optional
	Unlisted *Unlisted `json:"unlisted,omitempty"`
}

// Unlisted has no table.
type Unlisted struct {
	On bool `json:"on"`
}
