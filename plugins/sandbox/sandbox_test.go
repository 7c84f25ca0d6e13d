package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	RunIfHelper()
	os.Exit(m.Run())
}

// script writes an executable shell script into dir.
func script(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, spec Spec, env ...string) (string, string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := Command(context.Background(), self, spec, env)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func TestConfinedProgramSeesOnlyItsOwnFiles(t *testing.T) {
	if LandlockABI() == 0 {
		t.Skip("this kernel has no Landlock: the confinement under test cannot apply here")
	}
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "api-token")
	os.WriteFile(secret, []byte("s3cret-token"), 0o600)
	pluginDir, work := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(pluginDir, "data.txt"), []byte("own data"), 0o600)
	prog := script(t, pluginDir, `
cat "`+secret+`" 2>/dev/null && echo "READ SECRET"
cat "`+filepath.Join(pluginDir, "data.txt")+`"; echo
echo written > "$HOME/out.txt" && echo "wrote home"
echo nope > "`+filepath.Join(secretDir, "x")+`" 2>/dev/null && echo "WROTE OUTSIDE"
echo "home=$HOME pwd=$(pwd)"
env | grep -c OMNIBRAIN_TEST_SECRET || true
`)
	t.Setenv("OMNIBRAIN_TEST_SECRET", "daemon-only")
	out, stderr, err := run(t, Spec{Path: prog, ReadDirs: []string{pluginDir}, WorkDir: work, RequireLandlock: true})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	for _, bad := range []string{"READ SECRET", "s3cret-token", "WROTE OUTSIDE"} {
		if strings.Contains(out, bad) {
			t.Errorf("the confined program could do what it must not (%q):\n%s", bad, out)
		}
	}
	for _, want := range []string{"own data", "wrote home", "home=" + work + " pwd=" + work, "\n0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("work dir file: %q, %v", b, err)
	}
}

func TestLimitsApply(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	prog := script(t, dir, "ulimit -n; ulimit -f\n")
	out, stderr, err := run(t, Spec{Path: prog, ReadDirs: []string{dir}, WorkDir: work, Limits: Limits{OpenFiles: 32, FileBytes: 1 << 20}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	// ulimit -f counts 512-byte blocks in sh (dash, bash in POSIX mode: 1024).
	if lines := strings.Fields(out); len(lines) != 2 || lines[0] != "32" || (lines[1] != "2048" && lines[1] != "1024") {
		t.Errorf("limits inside the sandbox: %q", out)
	}
}

func TestBadSpecIsRefusedNotRun(t *testing.T) {
	if code := Main([]string{"{not json"}); code != ExitRefused {
		t.Errorf("bad spec: exit %d", code)
	}
	if _, err := Command(context.Background(), "/bin/true", Spec{Path: "relative", WorkDir: "/tmp"}, nil); err == nil {
		t.Error("a relative program path was accepted")
	}
}
