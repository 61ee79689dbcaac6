package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRender runs `metascript render` over the examples, in both languages, and over inputs
// that are wrong, comparing exit code, stdout and stderr with testdata/render/golden/NAME.
// Both languages of an example share one golden file: they must render the same.
func TestRender(t *testing.T) {
	const ex, td, c = "../../examples/", "testdata/render/", "testdata/controllers/"
	now := "--now=2025-05-01T12:00:00Z"
	type renderCase struct {
		name, golden string
		args         []string
	}
	var tests []renderCase
	for _, lang := range []string{"starlark", "javascript"} {
		example := func(name string, extra ...string) []string {
			args := []string{"-f", ex + name + "/controller-" + lang + ".yaml"}
			if _, err := os.Stat(ex + name + "/crd.yaml"); err == nil {
				args = append(args, "-f", ex+name+"/crd.yaml")
			}
			return append(append(args, now), extra...)
		}
		sample := func(name string) []string { return []string{"--parent", ex + name + "/sample.yaml"} }
		tests = append(tests,
			renderCase{name: "composite sync, nothing observed", golden: "website-sync",
				args: example("website", sample("website")...)},
			renderCase{name: "composite until stable", golden: "website-stable",
				args: example("website", append(sample("website"), "--until-stable")...)},
			renderCase{name: "composite finalize, children observed", golden: "website-finalize",
				args: example("website", append(sample("website"), "--hook", "finalize", "--observed", td+"website-children.yaml")...)},
			renderCase{name: "composite diff after an edit", golden: "website-edit-diff",
				args: example("website", "--parent", td+"website-edited.yaml", "--observed", td+"website-children.yaml", "--diff")},
			renderCase{name: "composite with rolling children, until stable", golden: "catset-stable",
				args: example("catset", append(sample("catset"), "--until-stable")...)},
			renderCase{name: "composite customize", golden: "configmap-propagation-customize",
				args: example("configmap-propagation", append(sample("configmap-propagation"), "--hook", "customize")...)},
			renderCase{name: "decorator sync", golden: "service-per-object-sync",
				args: example("service-per-object", sample("service-per-object")...)},
			renderCase{name: "decorator on a cluster-scoped target, until stable", golden: "rolebindings-stable",
				args: example("rolebindings-per-namespace", append(sample("rolebindings-per-namespace"), "--until-stable")...)},
			renderCase{name: "decorator diff", golden: "service-per-object-diff",
				args: example("service-per-object", append(sample("service-per-object"), "--diff")...)},
			renderCase{name: "map", golden: "snapshot-schedule-map",
				args: example("snapshot-schedule", append(sample("snapshot-schedule"), "--hook", "map")...)},
			renderCase{name: "tombstone", golden: "snapshot-schedule-tombstone",
				args: example("snapshot-schedule", "--parent", td+"snapshot-schedule.yaml", "--observed", td+"snapshots-detached.yaml", "--hook", "tombstone")},
		)
	}
	bundle := []string{"-f", c + "bundle-starlark.yaml", "-f", td + "bundle-crd.yaml", now}
	tests = append(tests,
		renderCase{name: "Events a hook asks for", golden: "events",
			args: []string{"-f", td + "events.yaml", "--parent", td + "events.yaml", now}},
		renderCase{name: "a hook that never settles", golden: "churn",
			args: []string{"-f", td + "churn.yaml", "--parent", td + "churn.yaml", "--until-stable", "--max-rounds", "4", now}},
		renderCase{name: "children in dependency order, until stable", golden: "order-stable",
			args: []string{"-f", td + "order.yaml", "--parent", td + "order.yaml", "--until-stable", now}},
		renderCase{name: "composite adopting an orphan", golden: "bundle-adopt",
			args: append(bundle, "--parent", td+"bundle.yaml", "--observed", td+"bundle-orphan.yaml")},
		renderCase{name: "the hook fails", golden: "bad-hook-fails", args: append(bundle, "--parent", td+"bundle-no-items.yaml")},
		renderCase{name: "a map call fails", golden: "bad-map-call-fails",
			args: []string{"-f", ex + "snapshot-schedule/controller-starlark.yaml", "-f", ex + "snapshot-schedule/crd.yaml",
				"--parent", td + "snapshot-bad-interval.yaml", now}},
		renderCase{name: "an invalid answer", golden: "bad-invalid-answer",
			args: []string{"-f", td + "wrong-child.yaml", "-f", td + "bundle-crd.yaml", "--parent", td + "bundle.yaml", now}},
		renderCase{name: "a compile error", golden: "bad-compile-error",
			args: []string{"-f", c + "broken-starlark.yaml", "-f", td + "bundle-crd.yaml", "--parent", td + "bundle.yaml", now}},
		renderCase{name: "a resource without its CRD", golden: "bad-unknown-resource",
			args: []string{"-f", c + "bundle-starlark.yaml", "--parent", td + "bundle.yaml", now}},
		renderCase{name: "no parent object", golden: "bad-no-parent", args: append(bundle, "--parent", td+"bundle-crd.yaml")},
		renderCase{name: "no such hook", golden: "bad-no-such-hook", args: append(bundle, "--parent", td+"bundle.yaml", "--hook", "map")},
		renderCase{name: "a hook the engine does not call", golden: "bad-hook-not-called",
			args: []string{"-f", ex + "snapshot-schedule/controller-starlark.yaml", "-f", ex + "snapshot-schedule/crd.yaml",
				"--parent", td + "snapshot-schedule.yaml", "--hook", "tombstone", now}},
		renderCase{name: "no --parent", golden: "bad-no-parent-flag", args: bundle},
		renderCase{name: "an unreadable observed file", golden: "bad-observed-missing",
			args: append(bundle, "--parent", td+"bundle.yaml", "--observed", td+"missing.yaml")},
	)
	for _, tt := range tests {
		t.Run(tt.name+" "+filepath.Base(tt.args[1]), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := renderCommand(tt.args, &stdout, &stderr)
			got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			checkRenderGolden(t, tt.golden, got)
		})
	}
}

// checkRenderGolden compares got with testdata/render/golden/NAME, or rewrites the file
// under -update.
func checkRenderGolden(t *testing.T, name, got string) {
	t.Helper()
	checkGoldenFile(t, filepath.Join("testdata", "render", "golden", name), got)
}
