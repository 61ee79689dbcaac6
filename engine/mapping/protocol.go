package mapping

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/reconcile"
)

// mapInput calls the map hook for one input: request controller, parent, mapKey, input and
// outputs (the key's observed outputs, keyed as CompositeController's children); response
// outputs and resyncAfterSeconds. A failure is left in j.err; an invalid answer is reported.
func (k *kind) mapInput(ctx context.Context, d *reconcile.Decision, j *job) {
	req := map[string]any{
		"controller": k.controller,
		"parent":     d.Parent.Object,
		"mapKey":     j.key,
		"input":      j.input.obj.Object,
		"outputs":    reconcile.ObjectMap(d.Parent, k.rules, j.group.rules(), k.hookVersion),
	}
	resp, err := d.CallAbout(ctx, "map", j.about, req)
	if err != nil {
		j.err = err
		return
	}
	j.outputs, j.resync, j.err = k.parseMap(resp, d.Parent, j.key)
	if j.err != nil {
		d.Reject("map", j.about, j.err)
	}
}

// The top-level fields of a map and a tombstone request, and of their responses.
var (
	mapRequestFields       = []string{"controller", "parent", "mapKey", "input", "outputs"}
	tombstoneRequestFields = []string{"controller", "parent", "mapKey", "outputs"}
	responseFields         = []string{"outputs", "resyncAfterSeconds"}
)

// parseMap validates a map response whole: outputs of declared output resources, legal
// names and namespaces, no duplicates; each gets the controller's mark and its map key.
func (k *kind) parseMap(resp map[string]any, parent *unstructured.Unstructured, key string) (map[int][]*unstructured.Unstructured, time.Duration, error) {
	if err := reconcile.CheckFields(resp, responseFields...); err != nil {
		return nil, 0, err
	}
	common, err := reconcile.ParseCommon(resp)
	if err != nil {
		return nil, 0, err
	}
	outputs, err := reconcile.Objects(resp, "outputs", parent, k.rules, "outputResources",
		func(path string, _ int, obj *unstructured.Unstructured) error {
			l := obj.GetLabels()
			if v, ok := l[MapKeyLabel]; ok && v != key {
				return reconcile.Invalid(path+".metadata.labels."+MapKeyLabel, "%q is another input's map key; the engine sets it to %q", v, key)
			}
			if v, ok := l[ControllerLabel]; ok && v != k.mark.Value {
				return reconcile.Invalid(path+".metadata.labels."+ControllerLabel, "%q names another controller", v)
			}
			reconcile.SetStrings(obj, "labels", map[string]string{ControllerLabel: k.mark.Value, MapKeyLabel: key})
			return nil
		})
	if err != nil {
		return nil, 0, err
	}
	return outputs, common.ResyncAfter, nil
}

// tombstoneKey calls the tombstone hook for a detached key: request controller, parent,
// mapKey and outputs; response outputs, the ones to keep (named by apiVersion, kind,
// namespace and name; their content is not read), and resyncAfterSeconds.
func (k *kind) tombstoneKey(ctx context.Context, d *reconcile.Decision, j *job) {
	req := map[string]any{
		"controller": k.controller,
		"parent":     d.Parent.Object,
		"mapKey":     j.key,
		"outputs":    reconcile.ObjectMap(d.Parent, k.rules, j.group.rules(), k.hookVersion),
	}
	resp, err := d.CallAbout(ctx, "tombstone", j.about, req)
	if err != nil {
		j.err = err
		return
	}
	j.keep, j.resync, j.err = k.parseTombstone(resp, d.Parent, j.group)
	if j.err != nil {
		d.Reject("tombstone", j.about, j.err)
	}
}

func (k *kind) parseTombstone(resp map[string]any, parent *unstructured.Unstructured, g *group) ([]*unstructured.Unstructured, time.Duration, error) {
	if err := reconcile.CheckFields(resp, responseFields...); err != nil {
		return nil, 0, err
	}
	common, err := reconcile.ParseCommon(resp)
	if err != nil {
		return nil, 0, err
	}
	named, err := reconcile.Objects(resp, "outputs", parent, k.rules, "outputResources", nil)
	if err != nil {
		return nil, 0, err
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
				return nil, 0, reconcile.Invalid("outputs", "%s %s is not an output of this map key",
					want.GetKind(), fmt.Sprintf("%s/%s", want.GetNamespace(), want.GetName()))
			}
		}
	}
	return keep, common.ResyncAfter, nil
}

// rules is the group's outputs by rule; nil groups have none.
func (g *group) rules() map[int][]*unstructured.Unstructured {
	if g == nil {
		return nil
	}
	return g.byRule
}
