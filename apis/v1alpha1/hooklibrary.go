package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HookLibrary holds modules of hook code that the hooks of cluster-scoped controllers load:
// load("lib:NAME/MODULE.star", ...) in Starlark, require("lib:NAME/MODULE") in JavaScript.
// Each module is compiled once per revision and shared by every controller that loads it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hl,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="Compiled")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HookLibrary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HookLibrarySpec `json:"spec"`
	// +optional
	Status HookLibraryStatus `json:"status,omitempty"`
}

// HookLibraryList is a list of HookLibraries.
//
// +kubebuilder:object:root=true
type HookLibraryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HookLibrary `json:"items"`
}

// NamespacedHookLibrary is a HookLibrary for the namespaced controllers of its own namespace
// only.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=nhl,categories=metascript
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Compiled",type=string,JSONPath=`.status.conditions[?(@.type=="Compiled")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedHookLibrary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HookLibrarySpec `json:"spec"`
	// +optional
	Status HookLibraryStatus `json:"status,omitempty"`
}

// NamespacedHookLibraryList is a list of NamespacedHookLibraries.
//
// +kubebuilder:object:root=true
type NamespacedHookLibraryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedHookLibrary `json:"items"`
}

// HookLibrarySpec is the code of a library.
type HookLibrarySpec struct {
	// Modules are the library's modules, each in one language. A hook loads a Starlark
	// module as lib:LIBRARY/NAME.star and requires a JavaScript module as lib:LIBRARY/NAME.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	Modules []LibraryModule `json:"modules"`
}

// LibraryModule is one module of a library: its name and its source in exactly one language.
//
// +kubebuilder:validation:XValidation:rule="has(self.starlark) != has(self.javascript)",message="exactly one of starlark or javascript must be set"
type LibraryModule struct {
	// Name is how hooks name the module; a Starlark module is loaded as NAME.star.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.-]*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Starlark is the module's Starlark source. Its top level runs once per revision; the
	// globals it defines are frozen and loaded by hooks.
	// +optional
	Starlark string `json:"starlark,omitempty"`
	// JavaScript is the module's JavaScript source, run as a CommonJS-like module: it
	// assigns what it offers to exports or module.exports.
	// +optional
	JavaScript string `json:"javascript,omitempty"`
}

// HookLibraryStatus is what the engine found of a library.
type HookLibraryStatus struct {
	// ObservedGeneration is the generation the engine last compiled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Revision is a short content hash of the modules; a hook may pin it
	// (lib:NAME@REVISION/MODULE).
	// +optional
	Revision string `json:"revision,omitempty"`
	// Conditions: Compiled (False with the module and the located compile error).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionCompiled is the condition type of HookLibraryStatus: whether every module compiled.
const ConditionCompiled = "Compiled"
