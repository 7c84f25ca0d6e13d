package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
)

// The end-to-end tests run the real binary as a child process, as a user
// or the service manager would.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildLog  []byte
)

// binary builds bin/omnibrain once per test run and returns its path.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "omnibrain-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "omnibrain")
		cmd := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", binPath, ".")
		buildLog, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build omnibrain: %v\n%s", buildErr, buildLog)
	}
	return binPath
}

// cleanEnv is the environment for child processes: no OMNIBRAIN_* from the
// developer's shell, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OMNIBRAIN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// cliTimeout bounds one CLI command, counted from its start (the binary
// is built before): a command takes well under a second, so minutes on a
// loaded machine mean it hangs.
const cliTimeout = 2 * time.Minute

// runCLI runs one CLI command to completion and returns stdout, stderr and
// the exit code.
func runCLI(t *testing.T, home string, args ...string) (string, string, int) {
	t.Helper()
	return runBinary(t, home, nil, nil, args...)
}

// runBinary runs one CLI command on home with extra environment variables
// and stdin (nil: none) to completion; a command that does not finish
// within cliTimeout fails the test as hung.
func runBinary(t *testing.T, home string, env []string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--home", home}, args...)...)
	cmd.Env = cleanEnv(env...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("omnibrain %v did not finish within %v (hung?)\nstdout:\n%s\nstderr:\n%s", args, cliTimeout, out.String(), errOut.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// daemonProc is a daemon started by startDaemon.
type daemonProc struct {
	cmd    *exec.Cmd
	home   string
	stderr *syncBuffer
	done   chan error
}

// startDaemon starts `omnibrain run` on home and waits until its API answers.
func startDaemon(t *testing.T, home string, env ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(binary(t), "--home", home, "run")
	cmd.Env = cleanEnv(env...)
	d := &daemonProc{cmd: cmd, home: home, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-d.done
	})
	c := api.NewUnixClient(filepath.Join(home, api.SocketName))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Status(ctx)
		cancel()
		if err == nil {
			return d
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("daemon exited before its API answered: %v\n%s", err, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon API did not answer within 30s: %v\n%s", err, d.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends sig and waits for the exit, returning the process error.
func (d *daemonProc) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	d.cmd.Process.Signal(sig)
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("daemon did not stop within 30s after %v\n%s", sig, d.stderr.String())
		return nil
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startImport starts `omnibrain import maildir dir` on home with a
// progress line per stored batch (whatever the machine's speed) and
// returns the process and its stderr.
func startImport(t *testing.T, home, dir string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(binary(t), "--home", home, "import", "--progress-every", "1ms", "maildir", dir)
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}
