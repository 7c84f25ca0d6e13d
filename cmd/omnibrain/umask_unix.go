//go:build unix

package main

import "syscall"

// privateUmask makes everything the daemon creates private to its user
// from the start: the API socket exists for a moment before it is
// chmodded, and a file a future change forgets to chmod stays private.
func privateUmask() { syscall.Umask(0o077) }
