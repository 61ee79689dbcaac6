package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/related"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
)

// requestCompleter completes requests written by hand with what the engine always sends.
type requestCompleter struct {
	rt   *scripting.Runtime
	set  *manifest.Set
	ctrl *manifest.Controller
	log  *slog.Logger
}

// complete returns req with what the engine always sends hook added where req lacks it, so
// that a minimal request holds every part a hook may rely on:
//
//   - controller: the controller resource;
//   - one group per resource the controller writes (children, attachments, outputs),
//     keyed as the engine keys it (<Kind>.<apiVersion>), empty;
//   - finalizing: true only when the parent has a deletionTimestamp;
//   - related: when req has none, an empty group for each rule of the customize hook's answer
//     for the parent (an inline hook is called, as the engine calls it), or {}.
//
// The request is the kind's own (reconcile.HookRequest), built with nothing observed; what
// req has is kept, its groups included. notes say what could not be added: a group of a
// resource whose kind is not known offline (offlineResolver), related groups when the
// customize hook is a webhook (not called offline) or failed.
func (c *requestCompleter) complete(ctx context.Context, hook string, req map[string]any) (_ map[string]any, notes []string) {
	d := c.ctrl.Descriptor
	parentObj, _ := req[d.RequestParent()].(map[string]any)
	if parentObj == nil {
		parentObj = map[string]any{}
	}
	parent := &unstructured.Unstructured{Object: parentObj}
	resolver := newOfflineResolver(c.set.CRDs, req)
	built := &reconcile.Built{Declared: c.ctrl.Declared, Descriptor: d, Object: c.ctrl.Object}
	type standIn struct{ key, note string }
	var unknown []standIn // the resources not resolved, in the order of the spec
	for _, ref := range c.ctrl.Declared.Resources {
		res, err := resolver.Resolve(ref.Rule.APIVersion, ref.Rule.Resource)
		if err != nil {
			// A stand-in whose key no real resource has; its groups are removed below.
			res = resources.Resource{}
			res.GVK.Kind = "?" + ref.Field
			unknown = append(unknown, standIn{res.Key(), fmt.Sprintf("%s: %v; the request gets no group for it", ref.Field, err)})
		}
		built.Resources = append(built.Resources, res)
	}

	rel := map[string]any{}
	if r, ok := req["related"].(map[string]any); ok {
		rel = r
	} else if hook != reconcile.CustomizeHook.Name {
		var err error
		if rel, err = c.related(ctx, parent, resolver); err != nil {
			rel = map[string]any{}
			notes = append(notes, err.Error())
		}
	}
	blank := reconcile.HookRequest(built, &reconcile.Gathered{Parent: parent, Hook: hook,
		Finalizing: parent.GetDeletionTimestamp() != nil, Related: rel})

	out := maps.Clone(req)
	for k, v := range blank {
		have, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		groups, isGroups := v.(map[string]any)
		mine, isMap := have.(map[string]any)
		if !isGroups || !isMap || !allObjects(groups) {
			continue
		}
		mine = maps.Clone(mine)
		for key, g := range groups {
			if _, ok := mine[key]; !ok {
				mine[key] = g
			}
		}
		out[k] = mine
	}
	for _, k := range slices.Sorted(maps.Keys(out)) {
		groups, ok := out[k].(map[string]any)
		if !ok {
			continue
		}
		for _, u := range unknown {
			if _, ok := groups[u.key]; ok {
				delete(groups, u.key)
				notes = append(notes, u.note)
			}
		}
	}
	return out, notes
}

// related calls the controller's customize hook for parent, as the engine does before sync
// and finalize, and returns the related map of its answer with every group empty; {} when the
// controller has no customize hook. A webhook is not called: offline runs reach no server
// they were not asked to. The error, located, says why related stays {}.
func (c *requestCompleter) related(ctx context.Context, parent *unstructured.Unstructured, resolver related.Resolver) (map[string]any, error) {
	const part = "hooks.customize (for request.related, left {}; write related: in the request to set it)"
	h, err := c.ctrl.Hook(reconcile.CustomizeHook.Name)
	if err != nil {
		return map[string]any{}, nil
	}
	if h.Def.Webhook != nil {
		return nil, fmt.Errorf("%s", located(c.ctrl, part, fmt.Errorf("a webhook, not called offline")))
	}
	inv, err := buildHook(ctx, c.rt, objectsOf(c.set), c.ctrl, reconcile.CustomizeHook.Name)
	if err != nil {
		return nil, fmt.Errorf("%s", located(c.ctrl, part, err))
	}
	resp, err := inv.Invoke(ctx, reconcile.CustomizeRequest(c.ctrl.Object, parent.Object), c.log)
	if err != nil {
		return nil, fmt.Errorf("%s", located(c.ctrl, part, err))
	}
	reach := reconcile.RelatedReach(&reconcile.Built{Declared: c.ctrl.Declared, Descriptor: c.ctrl.Descriptor})
	rules, err := related.ParseCustomize(resp, parent, resolver, reach)
	if err != nil {
		return nil, fmt.Errorf("%s", located(c.ctrl, part, err))
	}
	return related.EmptyObjects(parent, rules), nil
}

// allObjects says whether every value of m is an object: m is a map of groups (children,
// attachments, outputs, related), not an object such as the controller resource.
func allObjects(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// noteLines formats the notes of complete for stderr.
func noteLines(command string, notes []string) string {
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "metascript %s: %s\n", command, n)
	}
	return b.String()
}
