package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is the release this binary is, set when it is built:
//
//	go build -ldflags "-X main.version=v0.4.0" ./cmd/metascript
//
// Unset, it is the module's version when built as a dependency (go install ...@v0.4.0),
// else "dev".
var version = "dev"

var versionUsage = `Usage: metascript version   (or metascript --version)

Prints the version of this binary, and the commit it was built from when the build recorded
one: version (commit REVISION[, modified], COMMIT TIME, GO VERSION).

Flags:
`

// versionCommand is `metascript version`.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", versionUsage, stderr)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments %q", fs.Args())
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, "metascript "+versionLine(version, info))
	return exitOK
}

// versionLine is v followed by what info, the build's record (nil when there is none), says
// of the commit and the toolchain. A v left at "dev" gives way to the module's version when
// the module was built as a dependency at a tagged or pseudo version.
func versionLine(v string, info *debug.BuildInfo) string {
	if info == nil {
		return v
	}
	if m := info.Main.Version; v == "dev" && m != "" && m != "(devel)" {
		v = m
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var parts []string
	if rev := settings["vcs.revision"]; rev != "" {
		commit := "commit " + rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			commit += ", modified"
		}
		parts = append(parts, commit)
		if t := settings["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	if len(parts) == 0 {
		return v
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
