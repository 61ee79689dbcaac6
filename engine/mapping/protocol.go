package mapping

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
)

// call is the hook call of job j: for an input, the map hook with controller, parent, mapKey,
// input and outputs (the key's observed outputs, keyed as CompositeController's children);
// for a detached key, the tombstone hook without input.
func (k *kind) call(d *reconcile.Gathered, j *job) reconcile.Call {
	req := callRequest(k.controller, d.Parent, k.rules, j.group.rules(), k.hookVersion)
	req["mapKey"] = j.key
	if j.input != nil {
		req["input"] = j.input.obj.Object
	}
	return reconcile.Call{Hook: callHook(j), About: j.about, Request: req}
}

// callRequest is what a map and a tombstone request share: the controller, the parent and
// one key's outputs, grouped by rules.
func callRequest(controller map[string]any, parent *unstructured.Unstructured, rules []protocol.ChildRule,
	outputs map[int][]*unstructured.Unstructured, version v1alpha1.HookVersion) map[string]any {
	return map[string]any{
		"controller": controller,
		"parent":     parent.Object,
		"outputs":    protocol.ObjectMap(parent, rules, outputs, version),
	}
}

// request is Descriptor.Request: a map or tombstone request of the controller b without the
// mapKey and input of one call, every output rule as a plain rule.
func request(b *reconcile.Built, d *reconcile.Gathered) map[string]any {
	mc := b.Typed.(*v1alpha1.MapController)
	var rules []protocol.ChildRule
	for _, res := range b.Resources[1+len(mc.Spec.InputResources):] {
		rules = append(rules, protocol.ChildRule{Resource: res})
	}
	return callRequest(b.Object, d.Parent, rules, d.Observed, reconcile.HookVersion(b.Declared.Hooks["map"]))
}

// callHook is the hook job j calls.
func callHook(j *job) string {
	if j.input == nil {
		return "tombstone"
	}
	return "map"
}

// parse reads job j's answer: outputs and resyncAfterSeconds of a map call, the outputs to
// keep of a tombstone call. A failure is left in j.err.
func (k *kind) parse(d *reconcile.Gathered, j *job, resp map[string]any) {
	if j.input != nil {
		j.outputs, j.resync, j.events, j.err = k.parseMap(resp, d.Parent, j.key)
		return
	}
	j.keep, j.resync, j.events, j.err = k.parseTombstone(resp, d.Parent, j.group)
}

// The top-level fields of a map and a tombstone request, and of their responses.
var (
	mapRequestFields       = []string{"controller", "parent", "mapKey", "input", "outputs"}
	tombstoneRequestFields = []string{"controller", "parent", "mapKey", "outputs"}
	responseFields         = []string{"outputs", "resyncAfterSeconds", "events"}
)

// parseMap validates a map response whole: outputs of declared output resources, legal
// names and namespaces, no duplicates; each gets the controller's mark and its map key.
func (k *kind) parseMap(resp map[string]any, parent *unstructured.Unstructured, key string) (map[int][]*unstructured.Unstructured, time.Duration, []protocol.Event, error) {
	common, err := protocol.ParseCommon(resp, responseFields...)
	if err != nil {
		return nil, 0, nil, err
	}
	outputs, err := protocol.Objects(resp, "outputs", parent, k.rules, "outputResources", k.mark,
		func(path string, _ int, obj *unstructured.Unstructured) error {
			if v, ok := obj.GetLabels()[MapKeyLabel]; ok && v != key {
				return protocol.Invalid(path+".metadata.labels."+MapKeyLabel, "%q is another input's map key; the engine sets it to %q", v, key)
			}
			protocol.SetStrings(obj, "labels", map[string]string{MapKeyLabel: key})
			return nil
		})
	if err != nil {
		return nil, 0, nil, err
	}
	return outputs, common.ResyncAfter, common.Events, nil
}

// parseTombstone reads a tombstone answer: the outputs to keep (named by apiVersion, kind,
// namespace and name; their content is not read), and resyncAfterSeconds.
func (k *kind) parseTombstone(resp map[string]any, parent *unstructured.Unstructured, g *group) ([]*unstructured.Unstructured, time.Duration, []protocol.Event, error) {
	common, err := protocol.ParseCommon(resp, responseFields...)
	if err != nil {
		return nil, 0, nil, err
	}
	named, err := protocol.Objects(resp, "outputs", parent, k.rules, "outputResources", nil, nil)
	if err != nil {
		return nil, 0, nil, err
	}
	var keep []*unstructured.Unstructured
	for rule, list := range named {
		for _, want := range list {
			found := false
			for _, o := range g.byRule[rule] {
				if o.GetName() == want.GetName() && o.GetNamespace() == want.GetNamespace() {
					keep, found = append(keep, o), true
					break
				}
			}
			if !found {
				return nil, 0, nil, protocol.Invalid("outputs", "%s %s is not an output of this map key",
					want.GetKind(), fmt.Sprintf("%s/%s", want.GetNamespace(), want.GetName()))
			}
		}
	}
	return keep, common.ResyncAfter, common.Events, nil
}

// rules is the group's outputs by rule; nil groups have none.
func (g *group) rules() map[int][]*unstructured.Unstructured {
	if g == nil {
		return nil
	}
	return g.byRule
}
