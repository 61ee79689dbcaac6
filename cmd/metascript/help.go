package main

import (
	"fmt"
	"strings"

	"metascript.dev/metascript/apis/hooks"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/engine/reconcile"
)

// The help texts name controller kinds and hooks through these functions, which read them
// from engine/kinds, so that a kind added there is in every command's help.

// kindNames are the controller kinds: "CompositeController, DecoratorController or
// MapController".
func kindNames() string { return phrase.Either(kinds.Names()) }

// kindRefs are the forms of KIND/NAME: "compositecontroller/NAME, ... or mapcontroller/NAME".
func kindRefs() string {
	var refs []string
	for _, d := range kinds.All {
		refs = append(refs, d.Ref("NAME"))
	}
	return phrase.Either(refs)
}

// hookNames are the hooks of every kind, each once: "sync, finalize, ... or tombstone".
func hookNames() string { return phrase.Either(manifest.HookNames(kinds.Names())) }

// kindHooks is a table of the kinds and their hooks, one line a kind indented by two
// spaces, the hooks for which marked is true followed by a *.
func kindHooks(marked func(reconcile.Hook) bool) string {
	width := 0
	for _, d := range kinds.All {
		width = max(width, len(d.Kind))
	}
	var b strings.Builder
	for _, d := range kinds.All {
		var hooks []string
		for _, h := range d.Hooks {
			if marked(h) {
				hooks = append(hooks, h.Name+"*")
			} else {
				hooks = append(hooks, h.Name)
			}
		}
		fmt.Fprintf(&b, "  %-*s  %s\n", width, d.Kind, strings.Join(hooks, ", "))
	}
	return b.String()
}

// hookTypes is a table of each kind's hooks and their TypeScript function types, one line a
// hook, indented by two spaces.
func hookTypes() string {
	var b strings.Builder
	for _, h := range hooks.Hooks {
		fmt.Fprintf(&b, "  %-20s %-10s metascript.%s\n", h.Kind, h.Name, h.TypeName())
	}
	return b.String()
}

func primary(h reconcile.Hook) bool  { return h.Primary }
func required(h reconcile.Hook) bool { return h.Required }
