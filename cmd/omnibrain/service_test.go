package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kardianos/service"
)

// fakeSystemctl is a stand-in for systemctl on PATH: it logs every call and
// keeps "running" state in a file, the way `systemctl --user` would answer.
const fakeSystemctl = `#!/bin/sh
echo "$@" >> "$FAKE_SYSTEMCTL_LOG"
case "$1" in
  start) touch "$FAKE_SYSTEMCTL_STATE" ;;
  stop) rm -f "$FAKE_SYSTEMCTL_STATE" ;;
  is-active)
    if [ -f "$FAKE_SYSTEMCTL_STATE" ]; then echo active; exit 0; fi
    echo inactive; exit 3 ;;
  list-unit-files)
    if [ -f "$HOME/.config/systemd/user/omnibrain.service" ]; then echo "omnibrain.service enabled"; exit 0; fi
    echo "0 unit files listed."; exit 1 ;;
  --version) echo "systemd 252 (252.22-1)" ;;
esac
exit 0
`

// useSystemd puts binDir first on PATH and makes kardianos/service drive
// systemd, whatever this machine runs (a container has no systemd as PID 1).
// kardianos detects systemd by, among others, an rpm-ostree executable on
// PATH, so binDir gets one. The original choice is restored after PATH is.
func useSystemd(t *testing.T, binDir string) {
	t.Helper()
	all := service.AvailableSystems()
	t.Cleanup(func() { service.ChooseSystem(all...) }) // runs after PATH is restored
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.WriteFile(filepath.Join(binDir, "rpm-ostree"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.String() == "linux-systemd" {
			service.ChooseSystem(s)
			if service.ChosenSystem() == nil || service.ChosenSystem().String() != "linux-systemd" {
				t.Fatalf("could not choose systemd: %v", service.ChosenSystem())
			}
			return
		}
	}
	t.Fatalf("kardianos/service offers no linux-systemd system on %v", all)
}

func TestServiceInstallStartStatusUninstallAsSystemdUserUnit(t *testing.T) {
	userHome := t.TempDir()
	binDir := t.TempDir()
	log := filepath.Join(t.TempDir(), "systemctl.log")
	if err := os.WriteFile(filepath.Join(binDir, "systemctl"), []byte(fakeSystemctl), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", userHome)
	t.Setenv("FAKE_SYSTEMCTL_LOG", log)
	t.Setenv("FAKE_SYSTEMCTL_STATE", filepath.Join(t.TempDir(), "running"))
	useSystemd(t, binDir)

	home := filepath.Join(userHome, "omni data")
	cli := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"--home", home}, args...), nil, &out, &errOut, func(string) string { return "" })
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.String()
	}

	if got := cli("service", "status"); !strings.Contains(got, "not installed") {
		t.Fatalf("status before install = %q", got)
	}
	cli("service", "install")
	unitPath := filepath.Join(userHome, ".config/systemd/user/omnibrain.service")
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatalf("unit not written: %v", err)
	}
	// What was installed is exactly our rendered template.
	printed := cli("service", "install", "--print")
	if string(unit) != printed {
		t.Fatalf("installed unit differs from the rendered template:\n--- installed\n%s\n--- rendered\n%s", unit, printed)
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	for _, want := range []string{"WantedBy=default.target", `ExecStart="` + exe + `" "--home" "` + home + `" "run"`} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}

	cli("service", "start")
	if got := cli("service", "status"); !strings.Contains(got, "running") {
		t.Fatalf("status after start = %q", got)
	}
	cli("service", "stop")
	if got := cli("service", "status"); !strings.Contains(got, "stopped") {
		t.Fatalf("status after stop = %q", got)
	}
	cli("service", "uninstall")
	if _, err := os.Stat(unitPath); !os.IsNotExist(err) {
		t.Fatalf("unit still present after uninstall: %v", err)
	}

	calls, _ := os.ReadFile(log)
	for _, want := range []string{"enable --user omnibrain.service", "daemon-reload --user", "start --user omnibrain.service", "stop --user omnibrain.service", "disable --user omnibrain.service"} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("systemctl was not called with %q; calls:\n%s", want, calls)
		}
	}
	if strings.Contains(string(calls), "sudo") || strings.Contains(string(calls), "/etc/systemd") {
		t.Errorf("a user service must not touch the system manager:\n%s", calls)
	}
}

// A mistyped action is a usage error (exit 2) on every system, also where
// no supported service manager runs.
func TestServiceCommandLineMistakes(t *testing.T) {
	for _, args := range [][]string{{"service"}, {"service", "bogus"}, {"service", "start", "extra"}} {
		_, err := runInProcess(t, map[string]string{"OMNIBRAIN_HOME": t.TempDir()}, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// Where omnibrain cannot install a service, `service status` still says
// whether a daemon answers, with exit status 0; the other actions fail.
func TestServiceStatusOnAnUnsupportedSystem(t *testing.T) {
	all := service.AvailableSystems()
	t.Cleanup(func() { service.ChooseSystem(all...) })
	var other service.System
	for _, s := range all {
		if p := s.String(); p != "linux-systemd" && p != "darwin-launchd" {
			other = s
		}
	}
	if other == nil {
		t.Skipf("every service system here is supported: %v", all)
	}
	service.ChooseSystem(other)
	env := map[string]string{"OMNIBRAIN_HOME": t.TempDir()}
	out, err := runInProcess(t, env, "service", "status", "--json")
	var st struct {
		Service   string `json:"service"`
		Platform  string `json:"platform"`
		Answering bool   `json:"api_answering"`
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.Service != "unsupported" || st.Platform != other.String() || st.Answering {
		t.Errorf("service status --json: %v\n%s", err, out)
	}
	if _, err := runInProcess(t, env, "service", "start"); err == nil || !strings.Contains(err.Error(), "your own supervisor") {
		t.Errorf("service start: %v", err)
	}
}

// The service's unit carries only the home: settings this shell gives by
// OMNIBRAIN_* variables would be lost. Without a terminal install refuses
// with the fix and installs nothing; --save-env writes them into the home
// (the token in a 0600 file) and installs; doctor warns before and is
// content after.
func TestServiceInstallKeepsTheShellsSettings(t *testing.T) {
	userHome := t.TempDir()
	binDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(binDir, "systemctl"), []byte(fakeSystemctl), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", userHome)
	t.Setenv("FAKE_SYSTEMCTL_LOG", filepath.Join(t.TempDir(), "systemctl.log"))
	t.Setenv("FAKE_SYSTEMCTL_STATE", filepath.Join(t.TempDir(), "running"))
	useSystemd(t, binDir)
	home := filepath.Join(userHome, "omni")
	shell := map[string]string{"OMNIBRAIN_TELEGRAM_TOKEN": "123456:shell-token", "OMNIBRAIN_TELEGRAM_OWNER_ID": "4242", "OMNIBRAIN_SEND_DELAY": "20s"}
	cli := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"--home", home}, args...), nil, &out, &errOut, func(k string) string { return shell[k] })
		return out.String(), errOut.String(), err
	}
	unitPath := filepath.Join(userHome, ".config/systemd/user/omnibrain.service")

	out, _, _ := cli("doctor", "--json")
	if !strings.Contains(out, `"environment"`) || !strings.Contains(out, "OMNIBRAIN_TELEGRAM_TOKEN") || !strings.Contains(out, "--save-env") {
		t.Errorf("doctor does not warn about the shell-only settings:\n%s", out)
	}
	_, errOut, err := cli("service", "install")
	if err == nil || !strings.Contains(err.Error()+errOut, "OMNIBRAIN_TELEGRAM_TOKEN") || !strings.Contains(err.Error()+errOut, "--save-env") {
		t.Fatalf("install with shell-only settings: %v %s", err, errOut)
	}
	if _, err := os.Stat(unitPath); !os.IsNotExist(err) {
		t.Fatalf("installed although the service would lack the settings: %v", err)
	}
	if out, errOut, err = cli("service", "install", "--save-env"); err != nil {
		t.Fatalf("install --save-env: %v %s", err, errOut)
	}
	if _, err := os.Stat(unitPath); err != nil {
		t.Fatalf("not installed: %v", err)
	}
	tok, err := os.ReadFile(filepath.Join(home, "telegram-token"))
	fi, _ := os.Stat(filepath.Join(home, "telegram-token"))
	if err != nil || strings.TrimSpace(string(tok)) != "123456:shell-token" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %q %v %v", tok, fi, err)
	}
	if strings.Contains(out, "shell-token") {
		t.Errorf("install printed the token:\n%s", out)
	}
	// What the service will run with: the home alone.
	shellOnly := shell
	shell = map[string]string{}
	out, _, _ = cli("doctor", "--json")
	var results []map[string]any
	json.Unmarshal([]byte(out), &results)
	for _, r := range results {
		if r["name"] == "environment" && r["status"] != "ok" {
			t.Errorf("doctor after --save-env: %v", r)
		}
	}
	shell = shellOnly
	out, _, _ = cli("doctor", "--json")
	if strings.Contains(out, "set only in this shell") {
		t.Errorf("the shell's settings are in the home now, yet doctor warns:\n%s", out)
	}
}
