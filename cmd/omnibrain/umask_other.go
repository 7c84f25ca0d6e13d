//go:build !unix

package main

// privateUmask has nothing to do where there is no umask.
func privateUmask() {}
