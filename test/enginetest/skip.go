package enginetest

import (
	"fmt"
	"os"
	"testing"
)

// SkipsFileEnv names the file SkipMissing appends to: `make test` sets it and prints the file
// at the end, since go test shows no skip of a passing package without -v.
const SkipsFileEnv = "METASCRIPT_SKIPS"

// SkipMissing skips t because something it needs is not on this machine (reason says what,
// and how to provide it), and records the skip in the file $METASCRIPT_SKIPS names, if any,
// one line per skip. Tests skipped by choice (benchmarks without their flags, -short) use
// t.Skip.
func SkipMissing(t testing.TB, reason string) {
	t.Helper()
	if path := os.Getenv(SkipsFileEnv); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s: %s\n", t.Name(), reason)
			f.Close()
		}
	}
	t.Skip(reason)
}
