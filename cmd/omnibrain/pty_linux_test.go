package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal of cols columns: the child gets tty as
// its terminal, the test reads what it drew from ptmx.
func openPTY(t *testing.T, cols uint16) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), req, uintptr(arg)); e != 0 {
			t.Fatalf("ioctl %#x: %v", req, e)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	ws := struct{ rows, cols, x, y uint16 }{40, cols, 0, 0}
	ioctl(syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	return ptmx, tty
}

// runOnTerminal runs the binary with stdout and stderr on a terminal (or
// only stderr, when stdoutToo is false) and returns what the terminal
// showed, what went to a plain stdout, and the exit code.
func runOnTerminal(t *testing.T, env []string, stdoutToo bool, args ...string) (term, out string, code int) {
	t.Helper()
	ptmx, tty := openPTY(t, 120)
	cmd := exec.Command(binary(t), args...)
	cmd.Env = cleanEnv(append([]string{"TERM=xterm-256color"}, env...)...)
	var plain bytes.Buffer
	cmd.Stdout, cmd.Stderr = &plain, tty
	if stdoutToo {
		cmd.Stdout = tty
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child holds it now; EOF (EIO) on ptmx once it exits
	var shown bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(&shown, ptmx)
	}()
	err := cmd.Wait()
	wg.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return shown.String(), plain.String(), code
}
