package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Decoration is what a decorator sets on an object someone else controls (its target).
type Decoration struct {
	// Labels and Annotations map keys to values; a nil value removes the key, whoever set it.
	Labels, Annotations map[string]*string
	// Status holds the status fields to set; nil leaves the status alone.
	Status map[string]any
}

// DecorationRecord returns the annotation key under which a decorator records what it last
// applied to a target: decorators.metascript.dev/<name>, with the name shortened and
// hashed when it does not fit an annotation key's 63-character name part.
func DecorationRecord(decoratorName string) string {
	const prefix, limit = "decorators.metascript.dev/", 63
	if len(decoratorName) <= limit {
		return prefix + decoratorName
	}
	sum := sha256.Sum256([]byte(decoratorName))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return prefix + strings.TrimRight(decoratorName[:limit-len(suffix)], ".-") + suffix
}

// Decorate makes the target's labels, annotations and status fields hold d, by server-side
// apply under this Applier's field manager, so that keys and fields other managers set stay
// as they are, and a key or field this decorator set before and no longer returns is removed
// (unless another manager set it too). Keys d maps to nil are removed with a merge patch
// when they are still present afterwards.
//
// What was applied is recorded on the target as hashes under the annotation record (see
// DecorationRecord): when the recorded hashes match d and the target holds every value of
// d, Decorate sends no request. Status goes to the status subresource when hasStatus, in its
// own apply before the main one; otherwise with the labels.
//
// Every request carries the target's UID as a precondition, so a target deleted (or
// replaced) since it was observed is never created or written (ErrConflict). It returns the
// target as last stored, or nil when it sent nothing.
func (a *Applier) Decorate(ctx context.Context, res Resource, target *unstructured.Unstructured, record string,
	hasStatus bool, d Decoration) (*unstructured.Unstructured, error) {
	if target.GetUID() == "" || target.GetName() == "" {
		return nil, fmt.Errorf("%w: the target needs metadata.name and metadata.uid", ErrInvalid)
	}
	client, err := a.resourceFor(res, target)
	if err != nil {
		return nil, err
	}
	p := planDecoration(target, record, d)
	labels, annotations, recorded, statusOK, metaOK := p.labels, p.annotations, p.recorded, p.statusOK, p.metaOK
	stored := target
	if !statusOK && hasStatus {
		fields := map[string]any{"status": d.Status}
		if len(d.Status) == 0 {
			// An empty status would be applied as null, which a schema with a status object
			// refuses: applying none drops this manager's fields all the same.
			fields = map[string]any{}
		}
		out, err := client.ApplyStatus(ctx, target.GetName(), a.skeleton(target, fields),
			metav1.ApplyOptions{FieldManager: a.manager, Force: true})
		if err != nil {
			return nil, classify("apply status of", res, target, err)
		}
		stored = out
	}
	if !metaOK || !statusOK && !hasStatus {
		md := map[string]any{"annotations": strings2any(annotations, record, recorded)}
		if len(labels) > 0 {
			md["labels"] = strings2any(labels, "", "")
		}
		fields := map[string]any{"metadata": md}
		if !hasStatus && len(d.Status) > 0 { // empty: none, as above
			fields["status"] = d.Status
		}
		out, err := client.Apply(ctx, target.GetName(), a.skeleton(target, fields),
			metav1.ApplyOptions{FieldManager: a.manager, Force: true})
		if err != nil {
			return nil, classify("apply labels and annotations of", res, target, err)
		}
		stored = out
	}
	if removals := nullKeysPresent(stored, d); removals != nil {
		body, _ := json.Marshal(map[string]any{"metadata": removals})
		out, err := client.Patch(ctx, target.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: a.manager})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, classify("remove keys of", res, target, err)
		}
		stored = out
	}
	if stored == target {
		return nil, nil
	}
	return stored, nil
}

// decorationPlan is what Decorate decides from the target alone: the labels and annotations
// to hold, the record of them, and whether the status and the metadata hold d already.
type decorationPlan struct {
	labels, annotations map[string]string
	recorded            string
	statusOK, metaOK    bool
}

func planDecoration(target *unstructured.Unstructured, record string, d Decoration) decorationPlan {
	p := decorationPlan{labels: present(d.Labels), annotations: present(d.Annotations)}
	metaHash := hashJSON(map[string]any{"labels": p.labels, "annotations": p.annotations})
	old := strings.SplitN(target.GetAnnotations()[record], ".", 2)
	statusHash := ""
	if len(old) == 2 {
		statusHash = old[1]
	}
	if d.Status != nil {
		statusHash = hashJSON(d.Status)
	}
	p.recorded = metaHash + "." + statusHash
	p.statusOK = d.Status == nil || len(old) == 2 && old[1] == statusHash &&
		contains(d.Status, target.Object["status"])
	p.metaOK = target.GetAnnotations()[record] == p.recorded &&
		holds(target.GetLabels(), p.labels) && holds(target.GetAnnotations(), p.annotations)
	if len(p.labels) == 0 && len(p.annotations) == 0 && target.GetAnnotations()[record] == "" && p.statusOK {
		p.metaOK = true // nothing was ever applied and nothing is wanted: no record needed
	}
	return p
}

// Decorated returns a copy of target as Decorate would leave it, were every request to
// succeed, and whether Decorate would send any: d's labels and annotations set, the keys it
// maps to nil removed, the record annotation (see DecorationRecord) updated, and d.Status's
// fields merged into the status (objects field by field, other values replaced). Keys and
// fields this decorator set before and no longer returns are kept in the copy: only the API
// server's field ownership knows them. The offline commands show it; the engine writes it.
func Decorated(target *unstructured.Unstructured, record string, d Decoration) (*unstructured.Unstructured, bool) {
	p := planDecoration(target, record, d)
	changed := !p.statusOK || !p.metaOK || nullKeysPresent(target, d) != nil
	out := target.DeepCopy()
	if !changed {
		return out, false
	}
	labels, annotations := out.GetLabels(), out.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	for field, m := range map[string]map[string]string{"labels": labels, "annotations": annotations} {
		want := d.Labels
		if field == "annotations" {
			want = d.Annotations
		}
		for k, v := range want {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = *v
			}
		}
	}
	if !p.metaOK || !p.statusOK {
		annotations[record] = p.recorded
	}
	if len(labels) > 0 {
		out.SetLabels(labels)
	} else {
		out.SetLabels(nil)
	}
	if len(annotations) > 0 {
		out.SetAnnotations(annotations)
	} else {
		out.SetAnnotations(nil)
	}
	if d.Status != nil {
		have, _ := out.Object["status"].(map[string]any)
		out.Object["status"] = mergeFields(have, d.Status)
	}
	return out, true
}

// mergeFields returns have with set's fields set: objects merged field by field, other
// values replaced, as a server-side apply of set by one manager leaves them.
func mergeFields(have, set map[string]any) map[string]any {
	out := make(map[string]any, len(have)+len(set))
	maps.Copy(out, have)
	for k, v := range set {
		hv, _ := out[k].(map[string]any)
		if sv, ok := v.(map[string]any); ok && hv != nil {
			out[k] = mergeFields(hv, sv)
			continue
		}
		out[k] = v
	}
	return out
}

// skeleton is an apply configuration for target holding fields, with the target's UID as
// a precondition.
func (a *Applier) skeleton(target *unstructured.Unstructured, fields map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": target.GetName(), "uid": string(target.GetUID())}
	if ns := target.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if m, ok := fields["metadata"].(map[string]any); ok {
		maps.Copy(md, m)
	}
	obj := map[string]any{"apiVersion": target.GetAPIVersion(), "kind": target.GetKind()}
	maps.Copy(obj, fields)
	obj["metadata"] = md
	return &unstructured.Unstructured{Object: obj}
}

// nullKeysPresent returns a merge patch's metadata removing the keys d maps to nil that obj
// still has, or nil when there are none. The uid makes the patch a precondition.
func nullKeysPresent(obj *unstructured.Unstructured, d Decoration) map[string]any {
	var md map[string]any
	for field, want := range map[string]map[string]*string{"labels": d.Labels, "annotations": d.Annotations} {
		have, _, _ := unstructured.NestedStringMap(obj.Object, "metadata", field)
		for k, v := range want {
			if _, ok := have[k]; v == nil && ok {
				if md == nil {
					md = map[string]any{"uid": string(obj.GetUID())}
				}
				m, _ := md[field].(map[string]any)
				if m == nil {
					m = map[string]any{}
					md[field] = m
				}
				m[k] = nil
			}
		}
	}
	return md
}

func present(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// holds reports whether have has every key of want with its value.
func holds(have, want map[string]string) bool {
	for k, v := range want {
		if h, ok := have[k]; !ok || h != v {
			return false
		}
	}
	return true
}

func strings2any(m map[string]string, extraKey, extraValue string) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	if extraKey != "" {
		out[extraKey] = extraValue
	}
	return out
}

// hashJSON is the first 16 hex digits of the SHA-256 of v's JSON (map keys sorted).
func hashJSON(v any) string {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}
