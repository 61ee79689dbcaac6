package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// runDispatch runs the command line args as main does and returns its exit code and what
// it wrote on stdout and stderr.
func runDispatch(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	out, errOut := open("stdout"), open("stderr")
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errOut
	code = dispatch(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	out.Close()
	errOut.Close()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return code, read("stdout"), read("stderr")
}

const (
	onStdout = iota
	onStderr
)

type commandLineCase struct {
	args   []string
	code   int
	stream int // onStdout or onStderr
	// want starts the output on stream; the other stream stays empty.
	want string
}

// TestCommandLine: help, version, unknown commands and usage errors have one exit code each
// in every command: 0 for help and version, 2 for what cannot be run as written.
func TestCommandLine(t *testing.T) {
	cases := []commandLineCase{
		{nil, exitUsage, onStderr, "metascript — controllers"},
		{[]string{"-h"}, exitOK, onStdout, "metascript — controllers"},
		{[]string{"--help"}, exitOK, onStdout, "metascript — controllers"},
		{[]string{"help"}, exitOK, onStdout, "metascript — controllers"},
		{[]string{"--version"}, exitOK, onStdout, "metascript dev"},
		{[]string{"version"}, exitOK, onStdout, "metascript dev"},
		{[]string{"version", "extra"}, exitUsage, onStderr, `metascript version: unexpected arguments ["extra"]`},
		{[]string{"bogus"}, exitUsage, onStderr, "metascript: unknown command \"bogus\"\nRun 'metascript -h' for its commands.\n"},
		{[]string{"hook"}, exitUsage, onStderr, hookUsage},
		{[]string{"hook", "-h"}, exitOK, onStdout, hookUsage},
		{[]string{"hook", "--help"}, exitOK, onStdout, hookUsage},
		{[]string{"hook", "bogus"}, exitUsage, onStderr, "metascript hook: unknown command \"bogus\"\nRun 'metascript hook -h' for its commands.\n"},
		{[]string{"run", "extra"}, exitUsage, onStderr, `metascript run: unexpected arguments ["extra"]`},
	}
	// Every command and subcommand: its usage for -h and --help; a flag it does not have is
	// a usage error.
	for _, cmd := range [][]string{{"run"}, {"hook", "run"}, {"hook", "test"}, {"validate"}, {"render"}, {"convert"}, {"trace"}, {"types"}, {"admission"}, {"version"}} {
		name := strings.Join(cmd, " ")
		for _, h := range []string{"-h", "--help"} {
			cases = append(cases, commandLineCase{append(cmd[:len(cmd):len(cmd)], h), exitOK, onStderr, "Usage: metascript " + name})
		}
		cases = append(cases, commandLineCase{append(cmd[:len(cmd):len(cmd)], "--no-such-flag"), exitUsage, onStderr, "flag provided but not defined: -no-such-flag\nUsage: metascript " + name})
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := runDispatch(t, c.args...)
			got, other := stdout, stderr
			if c.stream == onStderr {
				got, other = stderr, stdout
			}
			if code != c.code || !strings.HasPrefix(got, c.want) || other != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and output starting %q on %s only", code,
					stdout, stderr, c.code, c.want, []string{"stdout", "stderr"}[c.stream])
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	cases := []struct {
		name, version string
		info          *debug.BuildInfo
		want          string
	}{
		{"no build info", "dev", nil, "dev"},
		{"built from a clean checkout", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")},
			"dev (commit 0123456789ab, 2026-01-02T03:04:05Z, go1.26.8)"},
		{"built with changes", "dev", &debug.BuildInfo{GoVersion: "go1.26.8",
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")},
			"dev (commit 0123456789ab, modified, go1.26.8)"},
		{"set with -X", "v0.4.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			"v0.4.0 (go1.26.8)"},
		{"installed at a version", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			"v0.3.0 (go1.26.8)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := versionLine(c.version, c.info); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
