package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HookRolloutPolicy stages a change of a controller's hooks (spec.hooks and spec.script):
// the changed hooks first drive a canary share of the parents while the others keep the
// previous hooks, then the share grows in steps to every parent. A failing sync of a parent
// on the changed hooks halts the rollout. Without a policy a changed hook reaches every
// parent at once. A change of anything but the hooks applies to every parent at once.
type HookRolloutPolicy struct {
	// Canary is how many parents run the changed hooks first: a count ("2") or a
	// percentage of the parents ("10%", rounded up); default 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	Canary *intstr.IntOrString `json:"canary,omitempty"`
	// Step is how many more parents each later step moves: a count or a percentage of the
	// parents (rounded up); default "25%".
	// +optional
	// +kubebuilder:validation:XIntOrString
	Step *intstr.IntOrString `json:"step,omitempty"`
	// Pause is how long each step lasts at least; a step also waits until every parent it
	// moved has synced successfully. Default 30s.
	// +optional
	Pause *metav1.Duration `json:"pause,omitempty"`
	// FailureThreshold is how many parents failing to sync on the changed hooks halt the
	// rollout; default 1. A sync fails when a hook throws, exhausts a budget, answers
	// something invalid, or would delete more than MaxDeletesPerSync.
	// +optional
	// +kubebuilder:validation:Minimum=1
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
	// MaxDeletesPerSync bounds how many children (attachments, outputs) one sync on the
	// changed hooks may delete; a sync that would delete more writes nothing and counts as
	// failed. Unset: no bound. It applies while the change rolls out.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxDeletesPerSync *int32 `json:"maxDeletesPerSync,omitempty"`
	// DryRun keeps every parent on the previous hooks and reports, in
	// status.hookRollout.dryRun, what the changed hooks would create, update and delete and
	// whose status they would change, writing nothing for them. Setting it back to false
	// starts the rollout.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Promote, set to the revision in status.hookRollout.revision, moves every parent to it
	// at once: past a halt, or past the steps left.
	// +optional
	Promote string `json:"promote,omitempty"`
}

// Phases of a hook rollout (HookRolloutStatus.Phase).
const (
	// RolloutProgressing: parents move to the changed hooks in steps.
	RolloutProgressing = "Progressing"
	// RolloutHalted: a parent failed on the changed hooks; the others stay on the previous
	// hooks until the hooks change again or the policy promotes the revision.
	RolloutHalted = "Halted"
	// RolloutDryRun: every parent runs the previous hooks; the changed hooks are only rendered.
	RolloutDryRun = "DryRun"
	// RolloutComplete: every parent runs Revision.
	RolloutComplete = "Complete"
)

// HookRolloutStatus is where a staged hook change stands. The engine keeps it in the
// controller's status so that a rollout survives an engine restart where it was.
type HookRolloutStatus struct {
	// Revision names the hooks the spec declares: a digest of spec.hooks and spec.script.
	Revision string `json:"revision"`
	// StableRevision names the hooks the parents that have not moved run.
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// Phase is Progressing, Halted, DryRun or Complete.
	Phase string `json:"phase"`
	// Step counts the steps taken: 1 is the canary.
	// +optional
	Step int32 `json:"step,omitempty"`
	// Cutoff says which parents run Revision: those whose rank (a digest of their uid and
	// Revision, 16 hex digits) is at most it. It grows with each step.
	// +optional
	Cutoff string `json:"cutoff,omitempty"`
	// StepStarted is when the current step began.
	// +optional
	StepStarted *metav1.Time `json:"stepStarted,omitempty"`
	// Parents counts the parents; UpdatedParents those that run Revision, and SyncedParents
	// those of them whose last sync on it succeeded.
	// +optional
	Parents int32 `json:"parents,omitempty"`
	// +optional
	UpdatedParents int32 `json:"updatedParents,omitempty"`
	// +optional
	SyncedParents int32 `json:"syncedParents,omitempty"`
	// CanaryParents names the first parents that run Revision (at most 10).
	// +optional
	// +listType=atomic
	CanaryParents []string `json:"canaryParents,omitempty"`
	// Failures counts the parents that failed to sync on Revision; FailedParent and Message
	// tell the first.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// +optional
	FailedParent string `json:"failedParent,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// DryRun is what Revision would do to the parents, while the policy asks for a dry run.
	// +optional
	DryRun *HookDryRun `json:"dryRun,omitempty"`
	// Stable holds the hooks of StableRevision (spec.hooks and spec.script as they were,
	// and the spec of each hook library they loaded), from which the engine compiles them
	// again after a restart.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Stable *runtime.RawExtension `json:"stable,omitempty"`
}

// HookDryRun sums what the changed hooks would do on every parent rendered.
type HookDryRun struct {
	// Revision is the revision rendered.
	Revision string `json:"revision"`
	// Parents counts the parents rendered; Failed those whose hooks failed, and
	// FailedParent and Message tell the first.
	Parents int32 `json:"parents"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	FailedParent string `json:"failedParent,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Creates, Updates and Deletes count the child writes the changed hooks would make;
	// StatusChanges the parents whose status or decoration they would change.
	Creates       int32 `json:"creates"`
	Updates       int32 `json:"updates"`
	Deletes       int32 `json:"deletes"`
	StatusChanges int32 `json:"statusChanges"`
}
