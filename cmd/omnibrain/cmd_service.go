package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kardianos/service"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/packaging"
	"golang.org/x/term"
)

const serviceName = "omnibrain"

var serviceActions = map[string]bool{"install": true, "uninstall": true, "start": true, "stop": true, "status": true}

func serviceCommand() *command {
	var print, saveEnv bool
	return &command{
		name:    "service",
		args:    "install|uninstall|start|stop|status",
		summary: "manage omnibrain as a user service (systemd user unit or launchd agent; no root)",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&print, "print", false, "install: print the unit file instead of installing it")
			fs.BoolVar(&saveEnv, "save-env", false, "install: write the OMNIBRAIN_* settings of this shell into the home (secrets in 0600 files) without asking, so the service sees them")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("service needs one of install, uninstall, start, stop, status")
			}
			// A typo is a usage error on every system, before the platform
			// check could bury it under "this service manager is not supported".
			if !serviceActions[args[0]] {
				return usagef("unknown service action %q: want install, uninstall, start, stop or status", args[0])
			}
			cfg, err := e.config()
			if err != nil {
				return err
			}
			def, err := serviceDefinition(cfg)
			if err != nil {
				return err
			}
			if args[0] == "install" && print {
				text, err := packaging.SystemdUnit(def)
				if runtime.GOOS == "darwin" {
					text, err = packaging.LaunchdPlist(def)
				}
				if err != nil {
					return err
				}
				e.printf("%s", text)
				return nil
			}
			if args[0] == "install" {
				if err := keepEnvironment(e, cfg, saveEnv); err != nil {
					return err
				}
			}
			svc, err := newService(def)
			var unsupported unsupportedPlatformError
			if errors.As(err, &unsupported) && args[0] == "status" {
				// Still answer the question that matters: does a daemon run?
				return printServiceStatus(ctx, e, cfg, "unsupported", unsupported.platform)
			}
			if err != nil {
				return err
			}
			return serviceAction(ctx, e, svc, cfg, args[0])
		},
	}
}

// keepEnvironment makes sure the service will see the settings this shell
// gives through OMNIBRAIN_* variables: the service's unit carries only the
// home. They are written into the home with --save-env or the owner's yes
// on a terminal; otherwise install is refused with the fix.
func keepEnvironment(e *env, cfg *config.Config, save bool) error {
	missing, err := config.OnlyInEnvironment(cfg.Home, e.getenv)
	if err != nil || len(missing) == 0 {
		return err
	}
	var lines []string
	for _, s := range missing {
		where := s.Key + " in " + config.FileName
		if s.Secret() {
			where = s.File + " (0600), named by " + s.Key
		}
		lines = append(lines, fmt.Sprintf("  %s → %s", s.Name, where))
	}
	list := strings.Join(lines, "\n")
	if !save {
		in, ok := e.stdin.(*os.File)
		if !ok || !term.IsTerminal(int(in.Fd())) {
			return fmt.Errorf("service install: this shell sets what the service would not see (its unit carries only the home):\n%s\nRun omnibrain service install --save-env to write them into %s, or put them there yourself", list, cfg.Home)
		}
		fmt.Fprintf(e.stderr, "The service sees only %s, not this shell's variables. Write these into it?\n%s\n[y/N] ", cfg.Home, list)
		answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return errors.New("service install: nothing installed; the service would run without those settings (omnibrain service install --save-env writes them)")
		}
	}
	if err := config.SaveEnvironment(cfg.Home, e.getenv, missing); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	e.printf("wrote into %s:\n%s\n", cfg.Home, list)
	return nil
}

// serviceDefinition describes the service for this binary and home.
func serviceDefinition(cfg *config.Config) (packaging.Service, error) {
	exe, err := os.Executable()
	if err != nil {
		return packaging.Service{}, fmt.Errorf("service: find this program: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return packaging.Service{
		Name:        serviceName,
		Description: "omnibrain proactive personal agent",
		Command:     []string{exe, "--home", cfg.Home, "run"},
		Home:        cfg.Home,
		LogDir:      cfg.Path("logs"),
	}, nil
}

// newService hands our rendered unit and plist to kardianos/service, which
// knows where user services live and how to drive systemctl and launchctl.
func newService(def packaging.Service) (service.Service, error) {
	unit, err := packaging.SystemdUnit(def)
	if err != nil {
		return nil, err
	}
	plist, err := packaging.LaunchdPlist(def)
	if err != nil {
		return nil, err
	}
	svc, err := service.New(noProgram{}, &service.Config{
		Name:        def.Name,
		DisplayName: def.Name,
		Description: def.Description,
		Executable:  def.Command[0],
		Arguments:   def.Command[1:],
		Option: service.KeyValue{
			"UserService":   true,
			"SystemdScript": unit,
			"LaunchdConfig": plist,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	switch p := svc.Platform(); p {
	case "linux-systemd", "darwin-launchd":
		return svc, nil
	default:
		return nil, unsupportedPlatformError{p}
	}
}

// unsupportedPlatformError is a service manager omnibrain cannot install into.
type unsupportedPlatformError struct{ platform string }

func (e unsupportedPlatformError) Error() string {
	return fmt.Sprintf("service: this system's service manager is %q; omnibrain installs only as a systemd user unit or a launchd agent. Run `omnibrain run` under your own supervisor, or see `omnibrain service install --print`", e.platform)
}

func serviceAction(ctx context.Context, e *env, svc service.Service, cfg *config.Config, action string) error {
	switch action {
	case "install":
		if err := os.MkdirAll(cfg.Path("logs"), 0o700); err != nil {
			return fmt.Errorf("service install: %w", err)
		}
		if err := svc.Install(); err != nil {
			return fmt.Errorf("service install: %w (is a user session running? on a server: loginctl enable-linger $USER)", err)
		}
		e.printf("installed %s as a %s user service; start it with: omnibrain service start\n", serviceName, svc.Platform())
	case "uninstall":
		_ = svc.Stop() // stopping a stopped service is not an error here
		if err := svc.Uninstall(); err != nil {
			return fmt.Errorf("service uninstall: %w", err)
		}
		e.printf("uninstalled %s\n", serviceName)
	case "start":
		if err := svc.Start(); err != nil {
			return fmt.Errorf("service start: %w (installed? omnibrain service install)", err)
		}
		e.printf("started %s\n", serviceName)
	case "stop":
		if err := svc.Stop(); err != nil {
			return fmt.Errorf("service stop: %w", err)
		}
		e.printf("stopped %s\n", serviceName)
	case "status":
		return serviceStatus(ctx, e, svc, cfg)
	default:
		return usagef("unknown service action %q: want install, uninstall, start, stop or status", action)
	}
	return nil
}

func serviceStatus(ctx context.Context, e *env, svc service.Service, cfg *config.Config) error {
	state := "unknown"
	st, err := svc.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		state = "not installed"
	case err != nil:
		state = "unknown: " + err.Error()
	case st == service.StatusRunning:
		state = "running"
	case st == service.StatusStopped:
		state = "stopped"
	}
	return printServiceStatus(ctx, e, cfg, state, svc.Platform())
}

func printServiceStatus(ctx context.Context, e *env, cfg *config.Config, state, platform string) error {
	answering := dialDaemon(ctx, cfg.Path(api.SocketName)) != nil
	if e.json {
		return e.printJSON(map[string]any{"service": state, "platform": platform, "api_answering": answering})
	}
	e.printf("service   %s (%s)\ndaemon    ", state, platform)
	if answering {
		e.printf("answering on %s\n", cfg.Path(api.SocketName))
	} else {
		e.printf("not answering\n")
	}
	return nil
}

// noProgram satisfies service.Interface: we only install and control the
// service here; the service itself runs `omnibrain run`.
type noProgram struct{}

func (noProgram) Start(service.Service) error { return nil }
func (noProgram) Stop(service.Service) error  { return nil }
