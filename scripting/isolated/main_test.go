package isolated_test

import (
	"io"
	"os"
	"os/exec"
	"testing"

	"metascript.dev/metascript/scripting/isolated"
)

// workerEnv makes the test binary a worker instead of running the tests, as `metascript
// hook-worker` makes the engine's binary one.
const workerEnv = "METASCRIPT_ISOLATED_TEST_WORKER"

// misbehaveEnv makes such a worker misbehave once it has computed a call's result, as the
// watchdog must expect of a worker: "stall" never sends it (a worker that no longer answers,
// past its timeout or a cancel), "crash" exits instead.
const misbehaveEnv = "METASCRIPT_ISOLATED_TEST_MISBEHAVE"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(isolated.Serve(os.Stdin, misbehaving{os.Stdout, os.Getenv(misbehaveEnv)}))
	}
	os.Exit(m.Run())
}

// misbehaving is a worker's output that does to results what its mode says.
type misbehaving struct {
	out  io.Writer
	mode string
}

func (m misbehaving) Write(b []byte) (int, error) {
	if isolated.IsResult(b) {
		switch m.mode {
		case "stall":
			return len(b), nil
		case "crash":
			os.Exit(70)
		}
	}
	return m.out.Write(b)
}

// workerCommand starts this test binary as a worker.
func workerCommand() *exec.Cmd { return misbehavingWorker("") }

// misbehavingWorker starts this test binary as a worker that misbehaves as mode says.
func misbehavingWorker(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"=1", misbehaveEnv+"="+mode)
	return cmd
}
