package hooks

// CompositeRequest is the request of a CompositeController's sync and finalize hooks.
type CompositeRequest struct {
	// Controller is the CompositeController resource.
	Controller Object `json:"controller"`
	// Parent is the parent object.
	Parent Object `json:"parent"`
	// Children are the children the parent owns, one group per child resource.
	Children ObjectMap `json:"children"`
	// Related are the objects the customize hook's rules select; {} without a customize hook.
	Related ObjectMap `json:"related"`
	// Finalizing is false for sync and true for finalize.
	Finalizing bool `json:"finalizing"`
}

// CompositeResponse is the answer of a CompositeController's sync and finalize hooks. It is
// validated whole before anything is written; an invalid answer writes nothing.
type CompositeResponse struct {
	// Status replaces the parent's status; absent or null leaves it alone.
	Status map[string]any `json:"status,omitempty" ts:"null"`
	// Children is the complete list of children the parent should have: those it owns and
	// this list leaves out are deleted. Each lists only the fields the hook cares about
	// (server-side apply); its labels must match the parent's selector.
	Children []Object `json:"children,omitempty" ts:"null"`
	// ResyncAfterSeconds asks for one more sync of this parent after that many seconds.
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds,omitempty" ts:"null"`
	// Finalized, from the finalize hook, says the cleanup is done: the engine removes its
	// finalizer from the parent.
	Finalized bool `json:"finalized,omitempty" ts:"null"`
	// Events are at most 10 Events to record on the parent.
	Events []Event `json:"events,omitempty" ts:"null"`
	// Order says which children wait for others to be ready before they are created: each
	// child it names is created only once every child it waits for is observed and passes
	// its readiness rule; the rest proceed at once. A child that exists is written as usual.
	// Children leave in reverse: one is deleted only once no child that waits for it remains.
	// A key naming no child of this answer, or a cycle, makes the answer invalid.
	Order []OrderEntry `json:"order,omitempty" ts:"null"`
}

// OrderEntry is one child of the answer and the children it waits for.
type OrderEntry struct {
	// Child names a child of the answer.
	Child ChildKey `json:"child"`
	// After are the children it waits for, each with when it counts as ready.
	After []Dependency `json:"after"`
}

// ChildKey names a child of the answer by apiVersion (any version of its group), kind and
// name; namespace defaults to the parent's, and is left out for a cluster-scoped child.
type ChildKey struct {
	// APIVersion is the child's group and version: "v1", "apps/v1".
	APIVersion string `json:"apiVersion"`
	// Kind is the child's kind: "ConfigMap".
	Kind string `json:"kind"`
	// Name is the child's name.
	Name string `json:"name"`
	// Namespace is the child's namespace; default the parent's.
	Namespace string `json:"namespace,omitempty"`
}

// Dependency is one child another waits for.
type Dependency struct {
	// Child names a child of the answer.
	Child ChildKey `json:"child"`
	// Ready says when the child counts as ready; absent, once it exists.
	Ready *ReadyRule `json:"ready,omitempty"`
}

// ReadyRule says when a child counts as ready: conditions, or path and value.
type ReadyRule struct {
	// Conditions must each be present in the child's status.conditions, with the status and
	// reason given (as a rolling rule's statusChecks).
	Conditions []ConditionCheck `json:"conditions,omitempty"`
	// Path is a dotted field path of the child, such as status.phase. Not with conditions.
	Path string `json:"path,omitempty"`
	// Value is what the field at path must hold, compared as JSON values (1 equals 1.0).
	Value any `json:"value,omitempty"`
}

// ConditionCheck requires a status condition of the given type, and when set its status
// and reason.
type ConditionCheck struct {
	// Type is the condition's type: "Ready".
	Type string `json:"type"`
	// Status, when set, is the status it must have: "True".
	Status string `json:"status,omitempty"`
	// Reason, when set, is the reason it must have.
	Reason string `json:"reason,omitempty"`
}

// CustomizeRequest is the request of the customize hook of a CompositeController or a
// DecoratorController.
type CustomizeRequest struct {
	// Controller is the controller resource.
	Controller Object `json:"controller"`
	// Parent is the parent object (the target, for a DecoratorController).
	Parent Object `json:"parent"`
}

// CustomizeResponse is the answer of a customize hook. It is asked for again when the
// parent's generation, labels or annotations change, so it should depend on nothing else.
type CustomizeResponse struct {
	// RelatedResources are the rules that select the parent's related objects.
	RelatedResources []RelatedRule `json:"relatedResources,omitempty" ts:"null"`
}

// RelatedRule selects related objects of one resource: by names, by labelSelector, or,
// with neither, every object (of namespace, when given).
type RelatedRule struct {
	// APIVersion is the resource's group and version: "v1".
	APIVersion string `json:"apiVersion"`
	// Resource is the resource's plural name: "configmaps".
	Resource string `json:"resource"`
	// LabelSelector selects objects by label; {} selects every object. Not with names.
	LabelSelector *LabelSelector `json:"labelSelector,omitempty"`
	// Names are the objects' names. Not with labelSelector.
	Names []string `json:"names,omitempty"`
	// Namespace, under a cluster-scoped parent, is where to look (default every namespace);
	// under a namespaced parent it may only be the parent's own, the default.
	Namespace string `json:"namespace,omitempty"`
	// NamespaceSelector, under a cluster-scoped parent, keeps objects in the namespaces whose
	// labels it matches. Not with namespace.
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
}
