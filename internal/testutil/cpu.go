package testutil

import (
	"syscall"
	"time"
)

// CPUTime is the user and system CPU time the process has used so far.
// Benchmarks report it per operation: on a machine shared with other work
// it is steadier than wall time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
