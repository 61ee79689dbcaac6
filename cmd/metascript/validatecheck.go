package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/cmd/metascript/internal/convert"
	"metascript.dev/metascript/cmd/metascript/internal/crdschema"
	"metascript.dev/metascript/cmd/metascript/internal/fieldpath"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/cmd/metascript/internal/yamlpos"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/scripting"
)

// finding is one problem, where it is written in its file.
type finding struct {
	pos yamlpos.Position
	// ref is the resource, KIND/NAME; field is the path from the resource's top. Either is
	// empty for a problem that is not about one (a document that is not YAML).
	ref, field string
	msg        string
}

// format is `FILE:LINE:COL: KIND/NAME FIELD: message`, less what the finding lacks.
func (f finding) format(file string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", file, f.pos.Line, f.pos.Col)
	switch {
	case f.ref != "" && f.field != "":
		b.WriteString(f.ref + " " + f.field + ": ")
	case f.ref != "" || f.field != "":
		b.WriteString(f.ref + f.field + ": ")
	}
	b.WriteString(f.msg)
	return b.String()
}

// fileCheck checks the documents of one file: every problem of every document, as the API
// server and then the engine would find them.
type fileCheck struct {
	ctx  context.Context
	path string
	rt   *scripting.Runtime
	objs offlineObjects

	found              []finding
	controllers, hooks int
}

// checkFile returns the problems of the file at path holding data, in file order, and how
// many controllers and hooks it declares.
func checkFile(ctx context.Context, rt *scripting.Runtime, objs offlineObjects, path string, data []byte) *fileCheck {
	fc := &fileCheck{ctx: ctx, path: path, rt: rt, objs: objs}
	for _, d := range manifest.Documents(data) {
		doc, err := yamlpos.Parse(d.Text, d.Start)
		var se *yamlpos.SyntaxError
		switch {
		case errors.As(err, &se):
			fc.add(finding{pos: yamlpos.Position{Line: se.Line, Col: 1}, msg: se.Msg})
			continue
		case err != nil || d.Err != nil:
			fc.add(finding{pos: yamlpos.Position{Line: d.Line, Col: 1}, msg: errors.Join(err, d.Err).Error()})
			continue
		}
		fc.value(doc, d.Value)
	}
	slices.SortStableFunc(fc.found, func(a, b finding) int {
		if a.pos.Line != b.pos.Line {
			return a.pos.Line - b.pos.Line
		}
		return a.pos.Col - b.pos.Col
	})
	return fc
}

func (fc *fileCheck) add(f finding) { fc.found = append(fc.found, f) }

// value checks one document, or one item of a List.
func (fc *fileCheck) value(doc *yamlpos.Document, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		if v != nil { // an empty document is no problem
			fc.add(finding{pos: doc.Position(""), msg: "expected a resource object, got " + phrase.TypeOf(v)})
		}
		return
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	switch {
	case apiVersion == "v1" && kind == "List":
		items, _ := obj["items"].([]any)
		for i, it := range items {
			fc.value(doc.Sub(fmt.Sprintf("items[%d]", i)), it)
		}
	case manifest.IsController(obj):
		fc.controller(doc, obj)
	case apiVersion == convert.MetacontrollerAPI && slices.Contains(convert.Kinds, kind):
		fc.add(finding{pos: doc.Position("apiVersion"), ref: refOf(obj), field: "apiVersion",
			msg: "a Metacontroller manifest: run 'metascript convert'"})
	case manifest.IsLibrary(obj):
		fc.library(doc, obj)
	case group == v1alpha1.GroupVersion.Group:
		fc.resource(doc, obj, group)
	default:
		if err := manifest.CheckObject(obj); err != nil {
			fc.objectError(doc, err)
		}
	}
}

// objectError places an error of manifest.CheckObject, `KIND/NAME: FIELD: message`, at its
// field.
func (fc *fileCheck) objectError(doc *yamlpos.Document, err error) {
	f := finding{pos: doc.Position(""), msg: err.Error()}
	if ref, rest, ok := strings.Cut(f.msg, ": "); ok && !strings.Contains(ref, " ") {
		f.ref, f.msg = ref, rest
		if field, rest, ok := strings.Cut(rest, ": "); ok && !strings.Contains(field, " ") {
			f.field, f.msg, f.pos = field, rest, doc.Position(field)
		}
	}
	fc.add(f)
}

// resource checks a resource of this API group that is no controller (a ControllerRevision)
// against its CRD, or says that the API server serves no such kind or version.
func (fc *fileCheck) resource(doc *yamlpos.Document, obj map[string]any, group string) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	schema, err := crdschema.For(apiVersion, kind)
	if err != nil {
		fc.add(finding{pos: doc.Position(""), msg: err.Error()})
		return
	}
	if schema != nil {
		for _, p := range schema.Check(fc.ctx, obj).Problems {
			fc.add(finding{pos: doc.Position(p.Path), ref: refOf(obj), field: p.Path, msg: p.Message})
		}
		return
	}
	versions, err := crdschema.Versions(group, kind)
	switch {
	case err != nil:
		fc.add(finding{pos: doc.Position(""), msg: err.Error()})
	case len(versions) > 0:
		fc.add(finding{pos: doc.Position("apiVersion"), ref: refOf(obj), field: "apiVersion",
			msg: fmt.Sprintf("Unsupported value: %q: supported values: %s", apiVersion, strings.Join(quoted(versions), ", "))})
	default:
		fc.add(finding{pos: doc.Position("kind"), ref: refOf(obj), field: "kind",
			msg: fmt.Sprintf("no kind %q is served in %s (kinds: %s)", kind, apiVersion, strings.Join(manifest.Kinds, ", "))})
	}
}

// controller checks a controller resource: against its CRD as the API server would, then,
// with what the API server would accept of it, as the engine would (admission.Controller).
func (fc *fileCheck) controller(doc *yamlpos.Document, obj map[string]any) {
	fc.controllers++
	ref := refOf(obj)
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	schema, err := crdschema.For(apiVersion, kind)
	if err != nil || schema == nil {
		fc.add(finding{pos: doc.Position(""), ref: ref, msg: fmt.Sprintf("no CRD schema: %v", err)})
		return
	}
	checked := schema.Check(fc.ctx, obj)
	reported := checked.Problems
	for _, p := range checked.Problems {
		fc.add(finding{pos: doc.Position(p.Path), ref: ref, field: p.Path, msg: p.Message})
	}
	if meta, _ := checked.Object["metadata"].(map[string]any); meta["name"] == nil && meta["generateName"] == nil {
		// As the API server's object meta validation words it; the schema leaves it out.
		fc.add(finding{pos: doc.Position("metadata.name"), ref: ref, field: "metadata.name",
			msg: "Required value: name or generateName is required"})
	}
	c, refused := fc.decode(doc, ref, checked.Object)
	if c == nil {
		return
	}
	fc.hooks += len(c.Hooks())
	removed := append(checked.Removed, refused...)
	for _, p := range admission.Controller(fc.ctx, c.Descriptor, c.Declared, admission.Options{Compiler: fc.rt, Objects: fc.objs,
		Libraries: func(namespaced bool, ns string) scripting.Libraries {
			return librariesIn(fc.objs.libraries, namespaced, ns)
		}}) {
		path := p.Path()
		if slices.ContainsFunc(removed, func(r string) bool { return fieldpath.Within(path, r) }) ||
			slices.ContainsFunc(reported, func(s crdschema.Problem) bool { return sameRule(s, path, p.Detail()) }) {
			continue
		}
		pos, field, msg := locate(doc, c, p)
		fc.add(finding{pos: pos, ref: ref, field: field, msg: msg})
	}
}

// decode reads obj as the engine does. A value the schema lets pass but the engine cannot
// read (a budget.timeout that is no duration) is reported at its field and taken out, so
// that the rest is still checked; refused lists those fields. c is nil when obj cannot be
// read even so.
func (fc *fileCheck) decode(doc *yamlpos.Document, ref string, obj map[string]any) (c *manifest.Controller, refused []string) {
	line := doc.Position("").Line
	for range 32 { // each round takes one field out; a resource has few such values
		c, err := manifest.ReadController(fc.path, line, obj)
		if err == nil {
			return c, refused
		}
		path := culprit(obj, err)
		if path == "" || !fieldpath.Delete(obj, fieldpath.Parse(path)) {
			fc.add(finding{pos: doc.Position(""), ref: ref, msg: err.Error()})
			return nil, refused
		}
		msg := strings.TrimPrefix(err.Error(), "unknown field "+path)
		if msg == "" {
			msg = "unknown field"
		}
		fc.add(finding{pos: doc.Position(path), ref: ref, field: path, msg: msg})
		refused = append(refused, path)
	}
	return nil, refused
}

// culprit is the field of obj that err, an error decoding obj, is about: the one named by
// an unknown-field error, else the first field without which decoding fails otherwise (or
// not at all), trying fields whose value err quotes first. Empty when none is.
func culprit(obj map[string]any, err error) string {
	msg := err.Error()
	if path, ok := strings.CutPrefix(msg, "unknown field "); ok && !strings.Contains(path, " ") {
		return path
	}
	var quoted, rest []string
	walkFields(obj, "", func(path string, v any) {
		if s, ok := v.(string); ok && strings.Contains(msg, s) && s != "" {
			quoted = append(quoted, path)
		} else {
			rest = append(rest, path)
		}
	})
	for _, path := range append(quoted, rest...) {
		if path == "apiVersion" || path == "kind" {
			continue
		}
		trial := runtime.DeepCopyJSON(obj)
		fieldpath.Delete(trial, fieldpath.Parse(path))
		if _, err := manifest.ReadController("", 0, trial); err == nil || err.Error() != msg {
			return path
		}
	}
	return ""
}

// walkFields calls fn for every field and list item under v, the innermost first.
func walkFields(v any, at string, fn func(path string, v any)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			p := k
			if at != "" {
				p = at + "." + k
			}
			walkFields(t[k], p, fn)
			fn(p, t[k])
		}
	case []any:
		for i, e := range t {
			p := fmt.Sprintf("%s[%d]", at, i)
			walkFields(e, p, fn)
			fn(p, e)
		}
	}
}

// sameRule reports whether the engine's problem at path, detail, is one the schema's
// problem s says already (the CRD's x-kubernetes-validations repeat the engine's rules):
// s lies at or under path and one message holds the other.
func sameRule(s crdschema.Problem, path, detail string) bool {
	if !fieldpath.Within(s.Path, path) {
		return false
	}
	// A rule's message follows `Invalid value: ` and, in some versions, the value's type.
	rule := strings.TrimPrefix(strings.TrimPrefix(s.Message, "Invalid value: "), `"object": `)
	return strings.Contains(detail, rule) || strings.Contains(rule, detail)
}

// locate places an engine problem in the file: a compile error at its line and column in
// the file when the source is a literal block (`source: |`), a function the source lacks at
// the `function:` field naming it, anything else at its field. The message is the problem's
// detail, less the position when that is placed in the file.
func locate(doc *yamlpos.Document, c *manifest.Controller, p admission.Problem) (pos yamlpos.Position, field, msg string) {
	field = p.Path()
	var ce *scripting.CompileError
	if !errors.As(p.Err, &ce) {
		return doc.Position(field), field, p.Detail()
	}
	source := p.Path()
	if ce.File == c.Descriptor.Ref(c.Declared.Key())+"/script" {
		source = "spec.script." + string(ce.Language) + ".source"
	}
	if !strings.HasSuffix(source, ".source") {
		return doc.Position(source), field, p.Detail()
	}
	// A function the source does not define is the `function:` field's fault, when set.
	if strings.HasPrefix(ce.Msg, "no top-level function") && strings.HasPrefix(p.Field, "hooks.") {
		fn := "spec." + p.Field + "." + string(ce.Language) + ".function"
		if _, ok := fieldpath.Get(c.Object, fieldpath.Parse(fn)); ok {
			return doc.Position(fn), fn, ce.Msg
		}
	}
	if pos, ok := doc.Source(source, ce.Line, ce.Column); ok {
		return pos, field, ce.Msg
	}
	return doc.Position(source), field, p.Detail()
}

// refOf names a resource as the offline commands do, KIND/NAME with the kind in lower case,
// or the kind alone when it has no name.
func refOf(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return strings.ToLower(kind)
	}
	return strings.ToLower(kind) + "/" + name
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
