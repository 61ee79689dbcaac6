package hooks

// MapRequest is the request of a MapController's map hook: one input of one parent.
type MapRequest struct {
	// Controller is the MapController resource.
	Controller Object `json:"controller"`
	// Parent is the parent object.
	Parent Object `json:"parent"`
	// MapKey is the input's map key: its UID.
	MapKey string `json:"mapKey"`
	// Input is the input object.
	Input Object `json:"input"`
	// Outputs are the outputs already made for this map key, one group per output resource.
	Outputs ObjectMap `json:"outputs"`
}

// MapResponse is the answer of a map hook. It is validated whole; an invalid answer changes
// nothing for its input.
type MapResponse struct {
	// Outputs is the complete list of this input's outputs: those it leaves out are deleted.
	// Each lists only the fields the hook cares about; the engine adds the labels
	// metascript.dev/map-controller and metascript.dev/map-key.
	Outputs []Object `json:"outputs,omitempty" ts:"null"`
	// ResyncAfterSeconds asks for one more call for this input after that many seconds.
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds,omitempty" ts:"null"`
	// Events are at most 10 Events to record on the parent.
	Events []Event `json:"events,omitempty" ts:"null"`
}

// TombstoneRequest is the request of a MapController's tombstone hook: a map key whose
// input is gone or no longer matches.
type TombstoneRequest struct {
	// Controller is the MapController resource.
	Controller Object `json:"controller"`
	// Parent is the parent object.
	Parent Object `json:"parent"`
	// MapKey is the detached map key: the UID its input had.
	MapKey string `json:"mapKey"`
	// Outputs are the outputs still kept for this map key, one group per output resource.
	Outputs ObjectMap `json:"outputs"`
}

// TombstoneResponse is the answer of a tombstone hook.
type TombstoneResponse struct {
	// Outputs are the outputs to keep, named by apiVersion, kind, metadata.name (and
	// namespace); their content is neither read nor written. The others are deleted.
	Outputs []Object `json:"outputs,omitempty" ts:"null"`
	// ResyncAfterSeconds asks for one more call for this key after that many seconds, so
	// that kept outputs can expire.
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds,omitempty" ts:"null"`
	// Events are at most 10 Events to record on the parent.
	Events []Event `json:"events,omitempty" ts:"null"`
}
