package v1alpha1

// ServiceAccountReference names the ServiceAccount a controller acts as. Every write the
// engine makes for the controller (children, attachments, outputs, the parent's status and
// finalizers, Events) impersonates it, so that the API server's RBAC decides what the
// controller may do.
type ServiceAccountReference struct {
	// Namespace of the ServiceAccount.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Name of the ServiceAccount.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}
