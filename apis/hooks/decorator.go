package hooks

// DecoratorRequest is the request of a DecoratorController's sync and finalize hooks.
type DecoratorRequest struct {
	// Controller is the DecoratorController resource.
	Controller Object `json:"controller"`
	// Object is the target: the object being decorated.
	Object Object `json:"object"`
	// Attachments are the attachments this decorator made for the target, one group per
	// attachment resource.
	Attachments ObjectMap `json:"attachments"`
	// Related are the objects the customize hook's rules select; {} without a customize hook.
	Related ObjectMap `json:"related"`
	// Finalizing is false for sync and true for finalize.
	Finalizing bool `json:"finalizing"`
}

// DecoratorResponse is the answer of a DecoratorController's sync and finalize hooks. It is
// validated whole before anything is written; an invalid answer writes nothing.
type DecoratorResponse struct {
	// Labels to set on the target, each to a string, or to null to remove the key.
	Labels map[string]*string `json:"labels,omitempty" ts:"null"`
	// Annotations to set on the target, each to a string, or to null to remove the key.
	Annotations map[string]*string `json:"annotations,omitempty" ts:"null"`
	// Status fields to set on the target; absent or null leaves the status alone.
	Status map[string]any `json:"status,omitempty" ts:"null"`
	// Attachments is the complete list of attachments the target should have: those this
	// list leaves out are deleted. Each lists only the fields the hook cares about.
	Attachments []Object `json:"attachments,omitempty" ts:"null"`
	// ResyncAfterSeconds asks for one more sync of this target after that many seconds.
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds,omitempty" ts:"null"`
	// Finalized, from the finalize hook, says the cleanup is done: the engine removes its
	// finalizer from the target.
	Finalized bool `json:"finalized,omitempty" ts:"null"`
	// Events are at most 10 Events to record on the target.
	Events []Event `json:"events,omitempty" ts:"null"`
}
