package main

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/isolated"
)

// workerEnv makes this test binary run `metascript hook-worker` instead of the tests.
const workerEnv = "METASCRIPT_CMD_TEST_HOOK_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(dispatch([]string{hookWorkerCommand}))
	}
	os.Exit(m.Run())
}

// TestHookWorkerCommand: the hidden subcommand serves the isolated tier's protocol, and
// the run flags configure the tier (0 workers: none).
func TestHookWorkerCommand(t *testing.T) {
	f, err := parseEngineFlags([]string{"--isolated-memory", "256Mi", "--isolated-cpu-time", "5s"})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := f.isolated.options(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Workers != 2 || opts.MemoryLimit != 256<<20 || opts.CPUTime.Seconds() != 5 {
		t.Errorf("options %+v", opts)
	}
	opts.Command = func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		return cmd
	}
	pool, err := isolated.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	prog, err := pool.Compile(scripting.Starlark, "h.star", "def sync(request):\n    return {\"n\": request[\"n\"] + 1}\n")
	if err != nil {
		t.Fatal(err)
	}
	v, err := prog.Call(context.Background(), scripting.Invocation{Function: "sync", Request: map[string]any{"n": int64(1)}})
	if err != nil || v.(map[string]any)["n"] != int64(2) {
		t.Errorf("got %v, %v", v, err)
	}

	off, err := parseEngineFlags([]string{"--isolated-workers", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if opts, err := off.isolated.options(slog.New(slog.DiscardHandler)); err != nil || opts.Workers != 0 {
		t.Errorf("--isolated-workers 0: %+v, %v", opts, err)
	}
	bad, _ := parseEngineFlags([]string{"--isolated-memory", "lots"})
	if _, err := bad.isolated.options(slog.New(slog.DiscardHandler)); err == nil {
		t.Error("--isolated-memory lots accepted")
	}
}
