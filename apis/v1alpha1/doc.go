// Package v1alpha1 holds the Go types of Metascript's controller resources in the API group
// metascript.dev, version v1alpha1: CompositeController, DecoratorController, MapController,
// their namespaced twins, the hook libraries, and the hook, budget and webhook specs that every controller kind
// shares. The CRDs in manifests/ are generated from these types (make generate); DeepCopy
// methods too.
//
// +kubebuilder:object:generate=true
// +groupName=metascript.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion names this API group and version.
var GroupVersion = schema.GroupVersion{Group: "metascript.dev", Version: "v1alpha1"}

// CompositeControllerResource is the GroupVersionResource of CompositeController.
var CompositeControllerResource = GroupVersion.WithResource("compositecontrollers")

// DecoratorControllerResource is the GroupVersionResource of DecoratorController.
var DecoratorControllerResource = GroupVersion.WithResource("decoratorcontrollers")

// MapControllerResource is the GroupVersionResource of MapController.
var MapControllerResource = GroupVersion.WithResource("mapcontrollers")

// NamespacedCompositeControllerResource is the GroupVersionResource of
// NamespacedCompositeController.
var NamespacedCompositeControllerResource = GroupVersion.WithResource("namespacedcompositecontrollers")

// NamespacedDecoratorControllerResource is the GroupVersionResource of
// NamespacedDecoratorController.
var NamespacedDecoratorControllerResource = GroupVersion.WithResource("namespaceddecoratorcontrollers")

// NamespacedMapControllerResource is the GroupVersionResource of NamespacedMapController.
var NamespacedMapControllerResource = GroupVersion.WithResource("namespacedmapcontrollers")

// ControllerRevisionResource is the GroupVersionResource of ControllerRevision.
var ControllerRevisionResource = GroupVersion.WithResource("controllerrevisions")

// HookLibraryResource is the GroupVersionResource of HookLibrary.
var HookLibraryResource = GroupVersion.WithResource("hooklibraries")

// NamespacedHookLibraryResource is the GroupVersionResource of NamespacedHookLibrary.
var NamespacedHookLibraryResource = GroupVersion.WithResource("namespacedhooklibraries")

// AddToScheme registers the types of this package with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &CompositeController{}, &CompositeControllerList{},
		&DecoratorController{}, &DecoratorControllerList{}, &MapController{}, &MapControllerList{},
		&NamespacedCompositeController{}, &NamespacedCompositeControllerList{},
		&NamespacedDecoratorController{}, &NamespacedDecoratorControllerList{},
		&NamespacedMapController{}, &NamespacedMapControllerList{},
		&ControllerRevision{}, &ControllerRevisionList{},
		&HookLibrary{}, &HookLibraryList{}, &NamespacedHookLibrary{}, &NamespacedHookLibraryList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
