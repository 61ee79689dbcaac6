//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used so far, user and system, on every
// thread: the garbage collector's and a webhook server's goroutines included.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
