package hooks

import (
	"encoding/json"
	"fmt"
)

// Object is a Kubernetes object in its JSON shape: its type, its metadata, and every other
// field its resource has (spec, status, data, ...). Objects in a request are the engine's
// cached objects, read-only; objects in a response list only the fields the hook cares
// about, and need apiVersion, kind and metadata.name.
type Object struct {
	// APIVersion is the object's group and version: "v1", "apps/v1".
	APIVersion string `json:"apiVersion"`
	// Kind is the object's kind: "ConfigMap".
	Kind string `json:"kind"`
	// Metadata is the object's metadata.
	Metadata ObjectMeta `json:"metadata"`
	// Fields are the object's other top-level fields, by name: spec, status, data, ...
	Fields map[string]any `json:"-" ts:"index"`
}

// UnmarshalJSON reads apiVersion, kind and metadata into their fields and every other
// top-level field into Fields. Metadata fields ObjectMeta does not name are dropped, as
// encoding/json drops them.
func (o *Object) UnmarshalJSON(data []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	*o = Object{}
	for name, to := range map[string]any{"apiVersion": &o.APIVersion, "kind": &o.Kind, "metadata": &o.Metadata} {
		raw, ok := all[name]
		if !ok {
			continue
		}
		delete(all, name)
		if err := json.Unmarshal(raw, to); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(all) > 0 {
		o.Fields = make(map[string]any, len(all))
		for name, raw := range all {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			o.Fields[name] = v
		}
	}
	return nil
}

// MarshalJSON writes Fields beside apiVersion, kind and metadata.
func (o Object) MarshalJSON() ([]byte, error) {
	all := make(map[string]any, len(o.Fields)+3)
	for name, v := range o.Fields {
		all[name] = v
	}
	all["apiVersion"], all["kind"], all["metadata"] = o.APIVersion, o.Kind, o.Metadata
	return json.Marshal(all)
}

// ObjectMeta is an object's metadata, as the API server stores it. In a response only name
// is required; namespace defaults to the parent's. The engine's caches drop managedFields.
type ObjectMeta struct {
	// Name is unique among the objects of its resource in its namespace.
	Name string `json:"name"`
	// GenerateName is the prefix the API server made the name from, if it made it.
	GenerateName string `json:"generateName,omitempty"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty"`
	// SelfLink is deprecated and no longer set by the API server.
	SelfLink string `json:"selfLink,omitempty"`
	// UID identifies the object for its whole life: a recreated object has a new one.
	UID string `json:"uid,omitempty"`
	// ResourceVersion changes at every write of the object.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Generation counts the changes to the object's desired state (its spec).
	Generation int64 `json:"generation,omitempty"`
	// CreationTimestamp is when the object was created, RFC 3339.
	CreationTimestamp string `json:"creationTimestamp,omitempty"`
	// DeletionTimestamp is set, RFC 3339, once the object is being deleted.
	DeletionTimestamp string `json:"deletionTimestamp,omitempty"`
	// DeletionGracePeriodSeconds is the grace period of a pending deletion.
	DeletionGracePeriodSeconds *int64 `json:"deletionGracePeriodSeconds,omitempty"`
	// Labels are the object's labels: what selectors match.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are the object's annotations: free-form strings for tools.
	Annotations map[string]string `json:"annotations,omitempty"`
	// OwnerReferences name the objects this one depends on; at most one is its controller.
	OwnerReferences []OwnerReference `json:"ownerReferences,omitempty"`
	// Finalizers must all be removed before a deleted object goes.
	Finalizers []string `json:"finalizers,omitempty"`
}

// OwnerReference names an object's owner (k8s.make_owner_ref makes one).
type OwnerReference struct {
	// APIVersion is the owner's apiVersion.
	APIVersion string `json:"apiVersion"`
	// Kind is the owner's kind.
	Kind string `json:"kind"`
	// Name is the owner's name.
	Name string `json:"name"`
	// UID is the owner's uid.
	UID string `json:"uid"`
	// Controller is true on the one reference to the object's controller.
	Controller *bool `json:"controller,omitempty"`
	// BlockOwnerDeletion keeps the owner from being deleted in the foreground before this object.
	BlockOwnerDeletion *bool `json:"blockOwnerDeletion,omitempty"`
}

// ObjectMap holds a request's observed objects (children, attachments, outputs, related)
// by group and key. A group is named "<Kind>.<apiVersion>" ("ConfigMap.v1",
// "Snapshot.examples.metascript.dev/v1alpha1") and is present for every resource the
// controller declares, even when empty. Within a group an object's key is its name, or
// "namespace/name" when the parent is cluster-scoped and the object namespaced; with
// version: v2 on the hook, "namespace/name" for every namespaced object.
type ObjectMap map[string]map[string]Object

// LabelSelector selects objects by their labels, as Kubernetes' own selectors do: an
// object matches when it matches every label and every expression. {} selects everything.
type LabelSelector struct {
	// MatchLabels are labels the object must have, with these values.
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions are further requirements on the object's labels.
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector.
type LabelSelectorRequirement struct {
	// Key is the label's key.
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	Operator string `json:"operator" tstype:"\"In\" | \"NotIn\" | \"Exists\" | \"DoesNotExist\""`
	// Values are the values In and NotIn compare with; empty for Exists and DoesNotExist.
	Values []string `json:"values,omitempty"`
}

// Condition is one entry of an object's status.conditions, as the k8s module's condition
// functions read and write them.
type Condition struct {
	// Type names the condition: Ready, Synced, ...
	Type string `json:"type"`
	// Status is "True", "False" or "Unknown".
	Status string `json:"status" tstype:"\"True\" | \"False\" | \"Unknown\""`
	// Reason is an UpperCamelCase word for why the status is what it is.
	Reason string `json:"reason,omitempty"`
	// Message says, for people, what the condition means now.
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when the status last changed, RFC 3339.
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	// ObservedGeneration is the object's metadata.generation the condition was set for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Event is one Event a hook asks the engine to record on its parent. The engine records
// the events of the reconcile's last hook answer once the reconcile wrote, within a rate
// per parent (a burst of 10, then one a minute).
type Event struct {
	// Type is "Normal" (the default) or "Warning".
	Type string `json:"type,omitempty" tstype:"\"Normal\" | \"Warning\""`
	// Reason is UpperCamelCase letters and digits, at most 128: what happened, in one word.
	Reason string `json:"reason"`
	// Message is for people, at most 1024 bytes: what happened and, for a Warning, what to do.
	Message string `json:"message"`
}
