package scripting

import (
	"fmt"
	"strings"
	"time"
)

// CompileError is a syntax or resolution error in hook source. Line and Column are 1-based;
// zero when unknown.
type CompileError struct {
	Language Language
	// File is the name the source was compiled under, e.g. "cc/my-controller/sync".
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s compile error: %s", e.File, e.Line, e.Column, e.Language, e.Msg)
}

// Frame is one entry of a script stack trace, innermost first.
type Frame struct {
	Function string
	File     string
	Line     int
	Column   int
}

func (f Frame) String() string {
	return fmt.Sprintf("%s:%d:%d in %s", f.File, f.Line, f.Column, f.Function)
}

// RuntimeError is an error raised while the hook ran: a thrown value (JavaScript), a failed
// builtin or fail() (Starlark), a missing function.
type RuntimeError struct {
	Language Language
	Msg      string
	// Thrown is the thrown value in JSON shape when a JavaScript hook threw a non-Error value.
	Thrown any
	// Stack is the script's stack trace, innermost first.
	Stack []Frame
}

func (e *RuntimeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s runtime error: %s", e.Language, e.Msg)
	for _, f := range e.Stack {
		b.WriteString("\n\tat ")
		b.WriteString(f.String())
	}
	return b.String()
}

// Budget names used in BudgetError.
const (
	BudgetTimeout    = "timeout"
	BudgetSteps      = "maxSteps"
	BudgetStackDepth = "maxStackDepth"
	BudgetMemory     = "maxMemory"
	BudgetOutput     = "maxOutput"
)

// BudgetError reports that an invocation was stopped because it exhausted a budget.
type BudgetError struct {
	Language Language
	// Budget is one of the Budget* names.
	Budget string
	// Limit and Used are in the budget's unit (see Unit).
	Limit int64
	Used  int64
	// Unit is "ns", "steps", "frames", "bytes" or "objects".
	Unit string
	// Stack is where the hook was when it was stopped, innermost first, if known.
	Stack []Frame
}

// At is a copy of e located at stack: a guard's refusal, reported where the hook was.
func (e *BudgetError) At(stack []Frame) *BudgetError {
	c := *e
	c.Stack = stack
	return &c
}

func (e *BudgetError) Error() string {
	if e.Unit == "ns" {
		return fmt.Sprintf("%s hook exceeded its %s budget: limit %s, used %s",
			e.Language, e.Budget, time.Duration(e.Limit), time.Duration(e.Used).Round(time.Microsecond))
	}
	return fmt.Sprintf("%s hook exceeded its %s budget: limit %d %s, used %d %s",
		e.Language, e.Budget, e.Limit, e.Unit, e.Used, e.Unit)
}

// OutputError reports a value the hook returned that cannot cross the boundary, located by
// its path in the result, e.g. `children[3].metadata.name: expected string, got int`.
type OutputError struct {
	Language Language
	Path     string
	Msg      string
}

func (e *OutputError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s hook returned an invalid value: %s", e.Language, e.Msg)
	}
	return fmt.Sprintf("%s hook returned an invalid value at %s: %s", e.Language, e.Path, e.Msg)
}
