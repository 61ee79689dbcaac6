package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"metascript.dev/metascript/engine/kinds"
)

// TestHelpKnowsEveryKind: the help of every command names every controller kind, and the
// help of the commands that call hooks names every hook of every kind.
func TestHelpKnowsEveryKind(t *testing.T) {
	help := func(cmd func(args []string, stdout, stderr io.Writer) int) string {
		var stderr bytes.Buffer
		if code := cmd([]string{"-h"}, io.Discard, &stderr); code != exitOK {
			t.Fatalf("-h: exit code %d", code)
		}
		return stderr.String()
	}
	helps := map[string]string{
		"metascript": usage,
		"run":        runUsage,
		"hook run":   help(hookRun),
		"hook test":  help(hookTest),
		"validate":   help(validate),
		"render":     help(renderCommand),
		"convert":    help(convertManifests),
		"admission":  help(func(args []string, _, stderr io.Writer) int { return admissionCommand(args, stderr) }),
	}
	for name, text := range helps {
		for _, d := range kinds.All {
			if !strings.Contains(text, d.Kind) {
				t.Errorf("%s -h does not name %s", name, d.Kind)
			}
			if name == "convert" || name == "run" {
				continue
			}
			for _, h := range d.Hooks {
				if !strings.Contains(text, h.Name) {
					t.Errorf("%s -h does not name %s's hook %s", name, d.Kind, h.Name)
				}
			}
		}
	}
}
