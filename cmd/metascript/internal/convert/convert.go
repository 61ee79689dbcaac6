// Package convert rewrites Metacontroller manifests as Metascript's: the apiVersion of every
// controller resource of Metacontroller's kinds (Kinds), optionally their webhook hooks as
// inline stubs, and a report of what Metascript cannot take. It works on decoded documents,
// so a document it rewrites keeps only the comments above it; every other document is
// copied as written.
package convert

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/scripting"
)

// MetacontrollerAPI is the apiVersion of the controller resources File rewrites.
const MetacontrollerAPI = "metacontroller.k8s.io/v1alpha1"

// Kinds are the controller kinds File converts: Metacontroller's, which Metascript has too.
var Kinds = []string{"CompositeController", "DecoratorController"}

// HookNames are the hooks of Kinds, each once, in the order the engine builds them.
var HookNames = manifest.HookNames(Kinds)

// Options say what File does besides rewriting the apiVersion.
type Options struct {
	// Inline, when set, replaces every webhook hook by an inline stub in this language, in
	// controllers of Kinds, Metacontroller's and Metascript's alike.
	Inline scripting.Language
	// Hooks narrows Inline to these hooks; empty means every hook.
	Hooks []string
	// Controller narrows Inline to the controller of this name, or KIND/NAME
	// (compositecontroller/NAME); empty means every controller.
	Controller string
}

// Finding is something of the input that is not in the output as written: a field Metascript
// has no place for, or a value it cannot take.
type Finding struct {
	File string
	// Line is the file line of the field, or of the resource for a finding about all of it.
	Line int
	// Ref is the resource as KIND/NAME, the kind in lower case (compositecontroller/NAME).
	Ref string
	// Field is the path of the field in the resource (spec.hooks.sync.webhook.etag); empty
	// when the finding is about the whole resource.
	Field string
	// Msg says what became of it and why.
	Msg string
}

// String is `FILE:LINE: KIND/NAME FIELD: MSG`.
func (f Finding) String() string {
	s := fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Ref)
	if f.Field != "" {
		s += " " + f.Field
	}
	return s + ": " + f.Msg
}

// Result is what converting one file gives.
type Result struct {
	// Documents are the output documents in input order, each ending in a newline, without
	// separators.
	Documents [][]byte
	// Findings are in file order.
	Findings []Finding
	// Switchovers are, per controller converted from Metacontroller or calling webhooks, in
	// file order, the switch-over steps and the hook server it calls.
	Switchovers []Switchover
	// Errors are the documents that could not be decoded (*manifest.DocError); a caller
	// should write no output when there are any.
	Errors []error
	// Converted counts the Metacontroller controllers rewritten, Stubs the webhooks replaced,
	// Selected the controllers Options.Inline applied to.
	Converted, Stubs, Selected int
}

// File converts the documents of data, naming them after path in findings and errors.
func File(path string, data []byte, opts Options) *Result {
	r := &Result{}
	for _, d := range manifest.Documents(data) {
		if d.Err != nil {
			r.Errors = append(r.Errors, &manifest.DocError{File: path, Line: d.Line, Err: d.Err})
			continue
		}
		c := &converter{opts: opts, r: r, file: path, lines: newPositions(d)}
		if !c.value(nil, d.Value) {
			r.Documents = append(r.Documents, d.Text)
			continue
		}
		out, err := yaml.Marshal(d.Value)
		if err != nil { // cannot happen to a value decoded from JSON
			r.Errors = append(r.Errors, &manifest.DocError{File: path, Line: d.Line, Err: err})
			continue
		}
		r.Documents = append(r.Documents, append(head(d), out...))
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return a.Line - b.Line })
	return r
}

// head is what precedes a document's first line of content: the comments above it, kept
// when the rest is encoded again.
func head(d manifest.Document) []byte {
	n := d.Line - d.Start
	return bytes.Join(bytes.SplitAfterN(d.Text, []byte("\n"), n+1)[:n], nil)
}

// converter converts one document.
type converter struct {
	opts  Options
	r     *Result
	file  string
	lines *positions
}

// value converts v, found at path at of the document, and says whether it changed it.
func (c *converter) value(at path, v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch {
	case apiVersion == "v1" && kind == "List":
		items, _ := obj["items"].([]any)
		changed := false
		for i, it := range items {
			changed = c.value(at.with("items", i), it) || changed
		}
		return changed
	case slices.Contains(Kinds, kind) && (apiVersion == MetacontrollerAPI || apiVersion == v1alpha1.GroupVersion.String()):
		return c.controller(at, kind, obj)
	case strings.HasPrefix(apiVersion, "metacontroller.k8s.io/"):
		c.report(at, ref(kind, obj), nil, "copied unchanged: Metascript has no such kind; "+
			"only "+strings.Join(Kinds, "s and ")+"s are converted")
	}
	return false
}

// controller converts the controller resource obj of the given kind.
func (c *converter) controller(at path, kind string, obj map[string]any) bool {
	name := ref(kind, obj)
	fromMetacontroller := obj["apiVersion"] == MetacontrollerAPI
	spec, _ := obj["spec"].(map[string]any)
	webhooks := webhooksOf(spec)
	changed := false
	if fromMetacontroller {
		obj["apiVersion"] = v1alpha1.GroupVersion.String()
		dropServerFields(obj)
		renameConnections(obj)
		c.r.Converted++
		changed = true
	}
	if c.opts.Inline != "" && c.selected(name, obj) {
		c.r.Selected++
		n := c.inline(kind, name, obj)
		c.r.Stubs += n
		changed = changed || n > 0
	}
	if fromMetacontroller {
		// After inlining, so that nothing is reported of a webhook that is gone.
		c.checkValues(at, kind, name, obj)
		c.dropUnknown(at, kind, name, obj)
		c.selfCheck(at, name, obj)
	}
	if fromMetacontroller || len(webhooks) > 0 {
		s := switchover(kind, obj, fromMetacontroller, webhooks)
		s.File, s.Line = c.file, c.lines.line(at)
		c.r.Switchovers = append(c.r.Switchovers, s)
	}
	return changed
}

// selected says whether Options.Inline applies to the controller called name (KIND/NAME).
func (c *converter) selected(name string, obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return c.opts.Controller == "" || c.opts.Controller == n || c.opts.Controller == name
}

// inline replaces the selected webhook hooks of obj by stubs and returns how many.
func (c *converter) inline(kind, name string, obj map[string]any) int {
	spec, _ := obj["spec"].(map[string]any)
	hooks, _ := spec["hooks"].(map[string]any)
	n := 0
	for _, hook := range HookNames {
		h, _ := hooks[hook].(map[string]any)
		w, ok := h["webhook"].(map[string]any)
		if !ok || (len(c.opts.Hooks) > 0 && !slices.Contains(c.opts.Hooks, hook)) {
			continue
		}
		delete(h, "webhook")
		h[string(c.opts.Inline)] = map[string]any{"source": stub(c.opts.Inline, kind, name, hook, spec, w)}
		n++
	}
	return n
}

// selfCheck reports what still keeps obj from being read as Metascript's, e.g. a value of
// the wrong type, which no rule above knows about.
func (c *converter) selfCheck(at path, name string, obj map[string]any) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		c.report(at, name, nil, "not valid after conversion: "+err.Error())
		return
	}
	for _, e := range manifest.Parse(c.file, data).Errors {
		c.report(at, name, nil, "not valid Metascript after conversion: "+e.Err.Error())
	}
}

// report adds a finding about field (a path in the resource at path at of the document).
func (c *converter) report(at path, name string, field path, msg string) {
	c.r.Findings = append(c.r.Findings, Finding{
		File: c.file, Line: c.lines.line(append(slices.Clone(at), field...)), Ref: name, Field: field.String(), Msg: msg,
	})
}

// ref names a resource KIND/NAME, the kind in lower case as the engine writes it.
func ref(kind string, obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return strings.ToLower(kind) + "/" + name
}

// serverMetadata are the metadata fields the API server sets on an object; they belong to the
// Metacontroller object and would make creating the Metascript one fail.
var serverMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// renameConnections moves spec.connections, the name some Metacontroller releases give the
// per-host webhook settings, to spec.endpointConfigs, Metascript's (and Metacontroller's
// documented) name for the same entries, unless the resource has both.
func renameConnections(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return
	}
	if conns, ok := spec["connections"]; ok {
		if _, both := spec["endpointConfigs"]; !both {
			spec["endpointConfigs"] = conns
			delete(spec, "connections")
		}
	}
}

// dropServerFields removes the status, the server-set metadata and kubectl's record of the
// last applied Metacontroller object, as `kubectl get -o yaml` writes them.
func dropServerFields(obj map[string]any) {
	delete(obj, "status")
	meta, _ := obj["metadata"].(map[string]any)
	for _, k := range serverMetadata {
		delete(meta, k)
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
}
