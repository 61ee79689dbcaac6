// Package recorded is a fixture of TestScanRecorded: each way the engine writes a reason or
// a condition type, and look-alikes the scan must not take.
package recorded

const SomeCondition = "SomeCondition"

const ConditionOther, unrelated = "OtherCondition", "NotACondition"

type status struct{ Reason, readyReason string }

func record(r recorder, cond map[string]any, err error) {
	r.Event(nil, "Warning", "EventReason", "message")
	r.warn(nil, "WarnReason", err)
	result, reason := "NotAReason", "AssignedReason"
	cond["reason"] = "IndexedReason"
	_ = status{Reason: "KeyedReason", readyReason: "BuiltReason"}
	_ = map[string]any{"type": "NotAType", "reason": "MapReason"}
	r.log("reason", "NotAReason")
	_, _ = result, reason
}

type recorder interface {
	Event(obj any, typ, reason, message string)
	warn(obj any, reason string, err error)
	log(kv ...string)
}
