// Package sandbox runs a local plugin's program confined: a scrubbed
// environment, a private temporary HOME and working directory, resource
// limits and, where the kernel has Landlock, no file access outside the
// system directories, the plugin's own folder and that temporary
// directory — so a plugin cannot read the omnibrain home (its database,
// the API token, other plugins' secrets).
//
// Landlock restricts the calling process irreversibly, so the daemon never
// restricts itself: it starts a helper (the omnibrain binary with the
// hidden HelperCommand), which sets the limits, restricts itself and then
// execs the plugin's program in its place.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// HelperCommand is the hidden first argument that makes the omnibrain
// binary (or a test binary, through TestMain) act as the helper.
const HelperCommand = "__plugin-sandbox"

// ExitRefused is the helper's exit status when it could not confine the
// program as asked; the program did not run.
const ExitRefused = 125

// Spec is what the helper runs and how it is confined.
type Spec struct {
	Path string   `json:"path"` // the program, absolute
	Args []string `json:"args,omitempty"`
	// ReadDirs may be read and executed (the plugin's folder).
	ReadDirs []string `json:"read_dirs,omitempty"`
	// WorkDir is the private HOME, TMPDIR and working directory, the only
	// place the program may write.
	WorkDir string `json:"work_dir"`
	// RequireLandlock refuses to run without Landlock: a plugin whose
	// read-only claim relies on it is not run unconfined.
	RequireLandlock bool   `json:"require_landlock,omitempty"`
	Limits          Limits `json:"limits"`
}

// Limits are the program's resource limits (setrlimit); zero keeps the
// default of DefaultLimits.
type Limits struct {
	CPUSeconds  uint64 `json:"cpu_seconds,omitempty"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"` // address space
	FileBytes   uint64 `json:"file_bytes,omitempty"`   // largest file it may write
	OpenFiles   uint64 `json:"open_files,omitempty"`
}

// DefaultLimits bound a plugin that declares nothing else: generous for
// an interpreter, small enough that a runaway cannot take the machine.
var DefaultLimits = Limits{CPUSeconds: 60, MemoryBytes: 4 << 30, FileBytes: 64 << 20, OpenFiles: 256}

// systemDirs may be read and executed by every plugin: programs,
// libraries and configuration such as certificates and time zones.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}

// devices a program commonly opens.
var devices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}

// LandlockABI is the kernel's Landlock ABI version, 0 when the kernel has
// no Landlock (or it is disabled).
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Command builds the command that runs spec through helper (the omnibrain
// binary). The environment is exactly env plus the private HOME and
// TMPDIR, a fixed PATH and a UTF-8 locale: nothing of the daemon's own
// environment (its tokens) is passed on.
func Command(ctx context.Context, helper string, spec Spec, env []string) (*exec.Cmd, error) {
	if !filepath.IsAbs(spec.Path) || !filepath.IsAbs(spec.WorkDir) {
		return nil, errors.New("sandbox: program and work dir must be absolute paths")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.CommandContext(ctx, helper, HelperCommand, string(b))
	cmd.Dir = spec.WorkDir
	cmd.Env = append([]string{
		"HOME=" + spec.WorkDir, "TMPDIR=" + spec.WorkDir, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
	}, env...)
	return cmd, nil
}

// Main is the helper: it is called with the arguments after
// HelperCommand, confines itself and execs the program. It returns only
// on failure, with the exit status to use.
func Main(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "sandbox: the helper takes one argument, the spec")
		return ExitRefused
	}
	var spec Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: spec: %v\n", err)
		return ExitRefused
	}
	if err := confine(spec); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
		return ExitRefused
	}
	err := syscall.Exec(spec.Path, append([]string{spec.Path}, spec.Args...), os.Environ())
	fmt.Fprintf(os.Stderr, "sandbox: exec %s: %v\n", spec.Path, err)
	return ExitRefused
}

// RunIfHelper runs the helper when the process was started as one (the
// first argument is HelperCommand) and exits; otherwise it returns. main
// and TestMain call it first.
func RunIfHelper() {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		os.Exit(Main(os.Args[2:]))
	}
}

func confine(spec Spec) error {
	if err := setLimits(spec.Limits); err != nil {
		return err
	}
	if LandlockABI() == 0 {
		if spec.RequireLandlock {
			return errors.New("this kernel has no Landlock, and this plugin is only run confined by it")
		}
		return nil
	}
	rules := []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.RWFiles(devices...).IgnoreIfMissing(),
		landlock.RWDirs(spec.WorkDir),
	}
	if len(spec.ReadDirs) > 0 {
		rules = append(rules, landlock.RODirs(spec.ReadDirs...))
	}
	if err := landlock.V5.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

func setLimits(l Limits) error {
	d := DefaultLimits
	for _, r := range []struct {
		res  int
		v, d uint64
	}{
		{syscall.RLIMIT_CPU, l.CPUSeconds, d.CPUSeconds},
		{syscall.RLIMIT_AS, l.MemoryBytes, d.MemoryBytes},
		{syscall.RLIMIT_FSIZE, l.FileBytes, d.FileBytes},
		{syscall.RLIMIT_NOFILE, l.OpenFiles, d.OpenFiles},
		{syscall.RLIMIT_CORE, 0, 0},
	} {
		v := r.v
		if v == 0 {
			v = r.d
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.res, &cur); err != nil {
			return fmt.Errorf("getrlimit: %w", err)
		}
		// Only ever lower a limit: raising a hard limit is not ours to do.
		lim := syscall.Rlimit{Cur: min(v, cur.Max), Max: min(v, cur.Max)}
		if err := syscall.Setrlimit(r.res, &lim); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.res, err)
		}
	}
	return nil
}
