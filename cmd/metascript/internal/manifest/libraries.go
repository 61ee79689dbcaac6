package manifest

import (
	"errors"
	"fmt"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/scripting"
)

// Library is a HookLibrary or NamespacedHookLibrary read from a file, converted as the
// engine converts it (hooks.LibraryOf).
type Library struct {
	// File and Line are where its document starts.
	File string
	Line int
	// Namespaced is true for a NamespacedHookLibrary. Namespace is its metadata.namespace;
	// one written without a namespace serves a controller of any namespace, as `kubectl
	// apply -n` would place it.
	Namespaced bool
	Namespace  string
	Library    *scripting.Library
}

// Where is the library's position for messages: FILE:LINE.
func (l Library) Where() string { return fmt.Sprintf("%s:%d", l.File, l.Line) }

// Kind is HookLibrary or NamespacedHookLibrary.
func (l Library) Kind() string {
	if l.Namespaced {
		return "NamespacedHookLibrary"
	}
	return "HookLibrary"
}

// IsLibrary reports whether obj, in JSON shape, claims to be a HookLibrary or a
// NamespacedHookLibrary.
func IsLibrary(obj map[string]any) bool {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return apiVersion == v1alpha1.GroupVersion.String() && (kind == "HookLibrary" || kind == "NamespacedHookLibrary")
}

// ReadLibrary decodes obj (IsLibrary), found at line of path, strictly, and converts it as
// the engine does.
func ReadLibrary(path string, line int, obj map[string]any) (Library, error) {
	kind, _ := obj["kind"].(string)
	var spec v1alpha1.HookLibrarySpec
	var err error
	var name, ns string
	if kind == "HookLibrary" {
		var l v1alpha1.HookLibrary
		err = decodeStrict(obj, &l)
		spec, name = l.Spec, l.Name
	} else {
		var l v1alpha1.NamespacedHookLibrary
		err = decodeStrict(obj, &l)
		spec, name, ns = l.Spec, l.Name, l.Namespace
	}
	if err == nil && name == "" {
		err = errors.New("metadata.name is required")
	}
	if err == nil && len(spec.Modules) == 0 {
		err = errors.New("spec.modules: a library needs at least one module")
	}
	if err != nil {
		return Library{}, err
	}
	lib, err := hooks.LibraryOf(name, spec)
	if err != nil {
		return Library{}, err
	}
	return Library{File: path, Line: line, Namespaced: kind == "NamespacedHookLibrary", Namespace: ns, Library: lib}, nil
}

// refOfLibrary names a library document, KIND/NAME with the kind in lower case, or is empty
// when it has no name.
func refOfLibrary(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name != "" {
		return strings.ToLower(kind) + "/" + name
	}
	return ""
}
