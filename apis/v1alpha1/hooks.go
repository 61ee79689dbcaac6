package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Hook says how one hook (sync, finalize, customize, ...) is invoked: inline Starlark, inline
// JavaScript, or a webhook. Exactly one form is set.
//
// +kubebuilder:validation:XValidation:rule="(has(self.starlark) ? 1 : 0) + (has(self.javascript) ? 1 : 0) + (has(self.webhook) ? 1 : 0) == 1",message="exactly one of starlark, javascript or webhook must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.budget) || !has(self.webhook) || !has(self.budget.maxSteps)",message="budget.maxSteps applies to Starlark hooks only"
type Hook struct {
	// Starlark runs the hook as inline Starlark.
	// +optional
	Starlark *InlineScript `json:"starlark,omitempty"`
	// JavaScript runs the hook as inline JavaScript (ES5.1 plus the ES2015+ goja supports).
	// +optional
	JavaScript *InlineScript `json:"javascript,omitempty"`
	// Webhook calls an HTTP endpoint with the request as JSON, as Metacontroller does.
	// +optional
	Webhook *Webhook `json:"webhook,omitempty"`
	// Budget limits one invocation. Unset fields take the engine's defaults; every field is
	// capped by the engine's ceilings.
	// +optional
	Budget *Budget `json:"budget,omitempty"`
	// Version selects the key format of the request's children and related maps: v1 (the
	// reference's `Kind.apiVersion` → name keys, the default) or v2 (`Kind.apiVersion` →
	// `namespace/name` keys for every object, whatever the scope).
	// +optional
	// +kubebuilder:validation:Enum=v1;v2
	Version HookVersion `json:"version,omitempty"`
}

// HookVersion selects the request key format.
type HookVersion string

const (
	HookVersionV1 HookVersion = "v1"
	HookVersionV2 HookVersion = "v2"
)

// InlineScript is hook code written in the controller resource.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.source) && has(self.configMapRef))",message="source and configMapRef are mutually exclusive"
type InlineScript struct {
	// Source is the program. When neither source nor configMapRef is set, the hook's function
	// is looked up in the controller's shared spec.script of the same language.
	// +optional
	Source string `json:"source,omitempty"`
	// ConfigMapRef reads the program from a key of a ConfigMap, for long sources.
	// +optional
	ConfigMapRef *ConfigMapKeyRef `json:"configMapRef,omitempty"`
	// Function is the top-level function to call. Defaults to the hook's name (sync,
	// finalize, customize).
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z_$][A-Za-z0-9_$]*$`
	Function string `json:"function,omitempty"`
}

// ConfigMapKeyRef names one key of a ConfigMap.
type ConfigMapKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// SharedScript is helper code that every hook of a controller can call: a hook whose inline
// form has neither source nor configMapRef calls its function in the shared script of its
// language.
type SharedScript struct {
	// +optional
	Starlark *ScriptSource `json:"starlark,omitempty"`
	// +optional
	JavaScript *ScriptSource `json:"javascript,omitempty"`
}

// ScriptSource is a program given inline or by ConfigMap reference.
//
// +kubebuilder:validation:XValidation:rule="has(self.source) != has(self.configMapRef)",message="exactly one of source or configMapRef must be set"
type ScriptSource struct {
	// +optional
	Source string `json:"source,omitempty"`
	// +optional
	ConfigMapRef *ConfigMapKeyRef `json:"configMapRef,omitempty"`
}

// Budget limits one hook invocation. Every field is capped by the engine's ceilings
// (metascript run --max-hook-*), whatever the controller asks for.
type Budget struct {
	// Timeout is the wall-clock limit of one invocation (inline hooks) or one HTTP request
	// (webhooks).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// MaxSteps limits Starlark execution steps.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxSteps *int64 `json:"maxSteps,omitempty"`
	// MaxStackDepth limits the call-stack depth of the hook's own functions.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxStackDepth *int32 `json:"maxStackDepth,omitempty"`
	// MaxMemory is the allocation budget of one invocation.
	// +optional
	MaxMemory *resource.Quantity `json:"maxMemory,omitempty"`
}
