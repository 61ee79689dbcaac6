package main

import (
	"errors"
	"fmt"
	"strings"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/scripting"
)

// readLibraryFiles reads the --library files: each must hold at least one HookLibrary or
// NamespacedHookLibrary. An unreadable file or a document that does not decode is an error
// (`FILE:LINE: ...`); other objects in the files are ignored.
func readLibraryFiles(paths []string) ([]manifest.Library, error) {
	var out []manifest.Library
	var errs []error
	for _, p := range paths {
		f, err := manifest.ReadFile(p)
		if err != nil {
			errs = append(errs, errors.New(unreadable(p, err)))
			continue
		}
		for _, de := range f.Errors {
			errs = append(errs, de)
		}
		if len(f.Errors) == 0 && len(f.Libraries) == 0 {
			errs = append(errs, fmt.Errorf("%s: no HookLibrary or NamespacedHookLibrary found", p))
		}
		out = append(out, f.Libraries...)
	}
	return out, errors.Join(errs...)
}

// checkLibraries refuses two libraries of one name in one scope: the cluster would hold
// only one of them.
func checkLibraries(libs []manifest.Library) error {
	seen := map[string]manifest.Library{}
	var errs []error
	for _, l := range libs {
		k := l.Kind() + "/" + l.Namespace + "/" + l.Library.Name
		if first, dup := seen[k]; dup {
			errs = append(errs, fmt.Errorf("%s: %s %s is given twice (first at %s)", l.Where(), l.Kind(), l.Library.Name, first.Where()))
			continue
		}
		seen[k] = l
	}
	return errors.Join(errs...)
}

// offlineLibraries are the libraries of the given files that one controller's hooks may
// load, chosen as the engine chooses them: HookLibraries for a cluster-scoped controller,
// the NamespacedHookLibraries of its namespace for a namespaced one. A library or a
// controller written without a namespace matches any namespace, as ConfigMaps do.
type offlineLibraries struct {
	scripting.LibrarySet
	// outOfScope are the given libraries the controller may not load, by name, for hints.
	outOfScope map[string]manifest.Library
}

// librariesFor selects the libraries of all that the hooks of c may load.
func librariesFor(all []manifest.Library, c *manifest.Controller) *offlineLibraries {
	return librariesIn(all, c.Descriptor.Namespaced, c.Declared.Namespace)
}

// librariesIn selects the libraries of all that the hooks of a controller of namespace ns
// may load; namespaced says whether its kind is namespaced.
func librariesIn(all []manifest.Library, namespaced bool, ns string) *offlineLibraries {
	scope := hooks.LibraryScope(ns)
	if namespaced && ns == "" {
		scope = "NamespacedHookLibrary"
	}
	out := &offlineLibraries{LibrarySet: scripting.LibrarySet{ScopeName: scope, ByName: map[string]*scripting.Library{}},
		outOfScope: map[string]manifest.Library{}}
	for _, l := range all {
		in := l.Namespaced == namespaced && (!namespaced || l.Namespace == "" || ns == "" || l.Namespace == ns)
		if in {
			out.ByName[l.Library.Name] = l.Library
		} else {
			out.outOfScope[l.Library.Name] = l
		}
	}
	return out
}

// MissingHint says how to give a library the hooks load and the files lack, or why the one
// given of that name does not serve this controller.
func (o *offlineLibraries) MissingHint(name string) string {
	l, ok := o.outOfScope[name]
	switch {
	case !ok:
		return "give it with --library FILE"
	case l.Namespaced && strings.HasPrefix(o.ScopeName, "NamespacedHookLibrary"):
		return fmt.Sprintf("the NamespacedHookLibrary at %s is of namespace %s", l.Where(), l.Namespace)
	case l.Namespaced:
		return fmt.Sprintf("the one at %s is a NamespacedHookLibrary: a cluster-scoped controller loads HookLibraries only", l.Where())
	}
	return fmt.Sprintf("the one at %s is a HookLibrary: a namespaced controller loads only the NamespacedHookLibraries of its namespace", l.Where())
}

var _ scripting.LibraryHinter = (*offlineLibraries)(nil)
