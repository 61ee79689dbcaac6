package isolated_test

import (
	"os"
	"os/exec"
	"testing"

	"metascript.dev/metascript/scripting/isolated"
)

// workerEnv makes the test binary a worker instead of running the tests, as `metascript
// hook-worker` makes the engine's binary one.
const workerEnv = "METASCRIPT_ISOLATED_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(isolated.Serve(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// workerCommand starts this test binary as a worker.
func workerCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}
