package scripting

import "fmt"

// WorkerError reports that the worker process running an isolated hook call (the isolated
// tier, scripting/isolated) ended or misbehaved before answering: killed by an operating-system
// limit, crashed, or closed its pipe. The call's result is lost; the worker has been replaced
// and no other call is affected. The in-process budgets (BudgetError) still apply inside the
// worker: a WorkerError means the hook escaped them.
type WorkerError struct {
	Language Language
	// Limit names the operating-system limit the worker hit, e.g. "memory (RLIMIT_AS 512Mi)"
	// or "cpu (RLIMIT_CPU 10s)"; empty when no limit is known to be the cause.
	Limit string
	// Exit describes how the process ended, e.g. "exit status 2" or "signal: killed".
	Exit string
	// Detail is the end of what the worker wrote to stderr (a Go fatal error), if anything.
	Detail string
}

func (e *WorkerError) Error() string {
	msg := "a hook's worker process died"
	if e.Language != "" {
		msg = fmt.Sprintf("%s hook's worker process died", e.Language)
	}
	if e.Limit != "" {
		msg += " past its " + e.Limit + " limit"
	}
	if e.Exit != "" {
		msg += " (" + e.Exit + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}
