package v1alpha1

// ServiceAccountReference names the ServiceAccount a controller acts as. Every write the
// engine makes for the controller (children, attachments, outputs, the parent's status and
// finalizers, Events) impersonates it, so that the API server's RBAC decides what the
// controller may do.
type ServiceAccountReference struct {
	// Namespace of the ServiceAccount: required on a cluster-scoped controller kind; on a
	// namespaced one, empty or the controller's own namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the ServiceAccount.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Isolation says where a controller's inline hooks run.
// +kubebuilder:validation:Enum=InProcess;Process
type Isolation string

const (
	// IsolationInProcess runs hooks in the engine's process, under the hook budgets.
	IsolationInProcess Isolation = "InProcess"
	// IsolationProcess runs hooks in the engine's isolated tier: worker processes under an
	// operating-system memory and CPU limit, for controllers whose code is not trusted. A
	// worker that dies fails only the call it was making. Webhook hooks are unaffected.
	IsolationProcess Isolation = "Process"
)
