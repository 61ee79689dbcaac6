package convert

import (
	"fmt"
	"strings"
)

// field is one key of a hook's request or response and what it holds. {null}, {true} and
// {false} stand for the words of the stub's language.
type field struct{ name, doc string }

// keys says how objects are keyed in a request's groups, the same for children, attachments
// and related objects.
const keys = `Each group maps "<Kind>.<apiVersion>" (Pod.v1) to the objects by KEY: their name; ` +
	`namespace/name for namespaced objects under a cluster-scoped parent, and for every ` +
	`namespaced object when hooks.sync has version: v2.`

// shape returns what a hook of kind receives and returns, as Metacontroller documents it;
// spec is the controller's spec, for the resources it names. The second result is a note
// printed above the fields, empty when the request holds no groups.
func shape(kind, hook string, spec map[string]any) (request, response []field, note string) {
	if hook == "customize" {
		target := "the parent object"
		if kind == "DecoratorController" {
			target = "the target object"
		}
		return []field{
				{"controller", "this " + kind},
				{"parent", target + " (" + rules(spec, "parentResource", "resources") + ")"},
			}, []field{
				{"relatedResources", "a list of rules, each {apiVersion, resource} with either labelSelector, or " +
					"namespace and names; the objects they select reach sync and finalize as request.related"},
			}, ""
	}
	finalizing := "{false} in sync, {true} in finalize"
	if kind == "DecoratorController" {
		finalizing += " (called while the target is deleted, or once it stops matching the selectors)"
		request = []field{
			{"controller", "this DecoratorController"},
			{"object", "the target object (" + rules(spec, "resources") + ")"},
			{"attachments", "the attachments this controller made, one group per attachments rule even when " +
				"empty (" + rules(spec, "attachments") + ")"},
		}
		response = []field{
			{"labels", "labels to set on the target: key to string; {null} removes the key"},
			{"annotations", "annotations to set on the target, the same way"},
			{"status", "status fields to set on the target; absent or {null} leaves its status alone"},
			{"attachments", "every attachment the target should have, each with apiVersion, kind, metadata.name " +
				"and the fields you care about (as for kubectl apply); an existing attachment left out is deleted"},
		}
	} else {
		request = []field{
			{"controller", "this CompositeController"},
			{"parent", "the parent object (" + rules(spec, "parentResource") + ")"},
			{"children", "the children that exist, one group per childResources rule even when empty (" +
				rules(spec, "childResources") + ")"},
		}
		response = []field{
			{"status", "replaces the parent's status; absent or {null} leaves it alone"},
			{"children", "every child the parent should have, each with apiVersion, kind, metadata.name and " +
				"the fields you care about (as for kubectl apply); an existing child left out is deleted"},
		}
	}
	request = append(request,
		field{"related", "the objects the customize hook's rules select, in groups as above ({} without a customize hook)"},
		field{"finalizing", finalizing})
	response = append(response, field{"resyncAfterSeconds", "optional: call the hook again for this object after that many seconds"})
	if hook == "finalize" {
		response = append(response, field{"finalized", "{true} once the cleanup is done; the finalizer holds the object until then"})
	}
	return request, response, keys
}

// rules lists the resources of the first of the spec's fields that is set: a resource rule
// or a list of them, as "catsets of ctl.enisoc.com/v1, pods of v1".
func rules(spec map[string]any, names ...string) string {
	for _, n := range names {
		var list []any
		switch v := spec[n].(type) {
		case map[string]any:
			list = []any{v}
		case []any:
			list = v
		default:
			continue
		}
		var out []string
		for _, it := range list {
			r, _ := it.(map[string]any)
			res, _ := r["resource"].(string)
			api, _ := r["apiVersion"].(string)
			out = append(out, fmt.Sprintf("%s of %s", res, api))
		}
		if len(out) > 0 {
			return strings.Join(out, ", ")
		}
		return "none"
	}
	return "none"
}
