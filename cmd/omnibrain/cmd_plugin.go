package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/plugins"
	"github.com/omnibrain/omnibrain/plugins/sandbox"
)

// listFlag collects a repeatable flag (--read A --read B).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type pluginFlags struct {
	read      listFlag
	yes       bool
	insecure  bool
	trust     bool
	tokenFile string
	name      string
}

func pluginCommand() *command {
	var f pluginFlags
	return &command{
		name: "plugin",
		args: "list | add [--read TOOL]... [--yes] [--insecure] [--trust] [--token-file F] [--name NAME] SOURCE | update NAME | verify [NAME] | remove NAME",
		summary: "add, review and remove plugins: chat tools from a manifest URL (Omi's format) or a local plugin folder; " +
			"every tool needs your approval of each call unless you name it with --read",
		flags: func(fs *flag.FlagSet) {
			fs.Var(&f.read, "read", "let `TOOL` run without asking (it only looks things up); repeatable")
			fs.BoolVar(&f.yes, "yes", false, "do not ask for confirmation on a terminal")
			fs.BoolVar(&f.insecure, "insecure", false, "accept plain http to hosts other than this machine")
			fs.BoolVar(&f.trust, "trust", false, "accept a local plugin's read-only claims where Landlock cannot enforce them")
			fs.StringVar(&f.tokenFile, "token-file", "", "file `F` with the secret sent as a bearer token to tools that say auth_required")
			fs.StringVar(&f.name, "name", "", "the plugin's `NAME` (default: from the manifest URL's host)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			sub, rest := "list", []string(nil)
			if len(args) > 0 {
				sub, rest = args[0], args[1:]
			}
			if sub != "add" && sub != "update" && (len(f.read) > 0 || f.yes || f.insecure || f.trust || f.tokenFile != "" || f.name != "") {
				return usagef("plugin %s: --read, --yes, --insecure, --trust, --token-file and --name are for plugin add and update", sub)
			}
			switch {
			case sub == "list" && len(rest) == 0:
				return pluginList(e)
			case sub == "add" && len(rest) == 1:
				return pluginAdd(ctx, e, f, rest[0])
			case sub == "update" && len(rest) == 1:
				if f.tokenFile != "" || f.name != "" {
					return usagef("plugin update: --token-file and --name are for plugin add")
				}
				return pluginUpdate(ctx, e, f, rest[0])
			case sub == "verify" && len(rest) <= 1:
				return pluginVerify(ctx, e, rest)
			case sub == "remove" && len(rest) == 1:
				return pluginRemove(ctx, e, rest[0])
			}
			return usagef("plugin takes: list | add SOURCE | update NAME | verify [NAME] | remove NAME (see omnibrain plugin --help)")
		},
	}
}

// pluginsRoot is HOME/plugins (or plugins.dir).
func (e *env) pluginsRoot() (string, string, error) {
	cfg, err := e.config()
	if err != nil {
		return "", "", err
	}
	if cfg.Plugins.Dir != "" {
		return cfg.Plugins.Dir, cfg.Home, nil
	}
	return cfg.Path("plugins"), cfg.Home, nil
}

func (f pluginFlags) addOptions(root, home, source string) plugins.AddOptions {
	return plugins.AddOptions{Root: root, Home: home, Source: source, Name: f.name, Read: f.read, Insecure: f.insecure,
		Trust: f.trust, TokenFile: f.tokenFile, Landlock: sandbox.LandlockABI() > 0, Now: time.Now()}
}

func pluginAdd(ctx context.Context, e *env, f pluginFlags, source string) error {
	root, home, err := e.pluginsRoot()
	if err != nil {
		return err
	}
	c, err := plugins.Prepare(ctx, f.addOptions(root, home, source))
	if err != nil {
		return err
	}
	return confirmAndSave(ctx, e, f, root, c, "added")
}

func pluginUpdate(ctx context.Context, e *env, f pluginFlags, name string) error {
	root, home, err := e.pluginsRoot()
	if err != nil {
		return err
	}
	c, err := plugins.PrepareUpdate(ctx, f.addOptions(root, home, ""), name)
	if err != nil {
		return err
	}
	return confirmAndSave(ctx, e, f, root, c, "confirmed")
}

// confirmAndSave shows the plugin, asks on a terminal (not with --yes,
// not in a script: the command line said it all), saves it and has a
// running daemon load it.
func confirmAndSave(ctx context.Context, e *env, f pluginFlags, root string, c *plugins.Candidate, done string) error {
	showCandidate(e, c)
	if in, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) && !f.yes {
		e.printf("\nSave plugin %s with these effects? [y/N] ", c.Pin.Name)
		line, _ := bufio.NewReader(io.LimitReader(e.stdin, 1024)).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			e.printf("nothing saved\n")
			return errSilent
		}
	}
	if err := c.Save(root); err != nil {
		return err
	}
	e.printf("%s %s (sha256 %s)\n", done, c.Pin.Name, c.Pin.SHA256[:16])
	reloadDaemon(ctx, e)
	return nil
}

func showCandidate(e *env, c *plugins.Candidate) {
	e.printf("Plugin %s — %s\n  manifest sha256 %s\n\n", c.Pin.Name, c.Pin.Source, c.Pin.SHA256)
	width := 0
	for _, t := range c.Tools {
		width = max(width, len(t.Name))
	}
	for _, t := range c.Tools {
		note := ""
		if t.Note != "" {
			note = " (" + t.Note + ")"
		}
		what := "each call waits for your approval"
		if t.Effect == plugins.EffectRead {
			what = "runs without asking; its answers are treated as untrusted"
		}
		e.printf("  %-8s  %-*s  %s%s\n            %s\n            %s\n", t.Effect, width, t.Name, t.Target, note,
			wrap(t.Description, 12), what)
		if t.Status != "" {
			e.printf("            shows “%s” while it runs\n", t.Status)
		}
	}
	for _, r := range c.Removed {
		e.printf("  removed   %s\n", r)
	}
	if c.ChatMessages {
		e.printf("\n  It may send you messages of its own (at most 10 an hour by default), with the key in %s.\n", plugins.AppKeyFile)
	}
	for _, w := range c.Warnings {
		e.printf("\n  ! %s\n", w)
	}
}

// reloadDaemon asks a running daemon to load the plugins again; without
// one the next start loads them.
func reloadDaemon(ctx context.Context, e *env) {
	cfg, err := e.config()
	if err != nil {
		return
	}
	c := dialDaemon(ctx, cfg.Path(api.SocketName))
	if c == nil {
		e.printf("the daemon is not running: omnibrain run uses it from its start\n")
		return
	}
	res, err := c.ReloadPlugins(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "omnibrain: the running daemon could not reload its plugins: %v (restart it)\n", apiError(err))
		return
	}
	e.printf("the running daemon now has %d plugins, %d tools\n", len(res.Plugins), res.Tools)
	for _, msg := range res.Errors {
		fmt.Fprintf(e.stderr, "! %s\n", msg)
	}
}

func pluginList(e *env) error {
	root, _, err := e.pluginsRoot()
	if err != nil {
		return err
	}
	list, err := plugins.List(root, sandbox.LandlockABI() > 0)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(list)
	}
	if len(list) == 0 {
		e.printf("no plugins (omnibrain plugin add URL|DIR)\n")
		return nil
	}
	for _, p := range list {
		e.printf("%s  %s  %s\n", p.Name, p.State, p.Source)
		if p.Detail != "" {
			e.printf("  %s\n", p.Detail)
		}
		for _, t := range p.Tools {
			e.printf("  %-8s  %s\n", t.Effect, t.Name)
		}
	}
	return nil
}

func pluginVerify(ctx context.Context, e *env, names []string) error {
	root, _, err := e.pluginsRoot()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		list, err := plugins.List(root, sandbox.LandlockABI() > 0)
		if err != nil {
			return err
		}
		for _, p := range list {
			names = append(names, p.Name)
		}
	}
	var out []plugins.Verified
	bad := false
	for _, n := range names {
		v := plugins.Verify(ctx, plugins.NewHTTPClient(), root, n, time.Now())
		out = append(out, v)
		bad = bad || v.State != plugins.StateOK
	}
	if e.json {
		if out == nil {
			out = []plugins.Verified{}
		}
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		for _, v := range out {
			e.printf("%s  %s\n", v.Name, v.State)
			if v.Detail != "" {
				e.printf("  %s\n", v.Detail)
			}
		}
	}
	if bad {
		return errSilent
	}
	return nil
}

func pluginRemove(ctx context.Context, e *env, name string) error {
	root, _, err := e.pluginsRoot()
	if err != nil {
		return err
	}
	if err := plugins.Remove(root, name); err != nil {
		return err
	}
	e.printf("removed %s\n", name)
	reloadDaemon(ctx, e)
	return nil
}

// checkPlugins says how local plugins are confined here and which added
// plugins need the owner.
func checkPlugins(cfg *config.Config) []checkResult {
	var out []checkResult
	if abi := sandbox.LandlockABI(); abi > 0 {
		out = append(out, checkResult{Name: "sandbox", Status: "ok",
			Detail: fmt.Sprintf("Landlock (ABI %d): local plugins run confined to their folder and a private HOME, and cannot read the omnibrain home", abi)})
	} else {
		out = append(out, checkResult{Name: "sandbox", Status: "info",
			Detail: "no Landlock in this kernel: local plugins run with a scrubbed environment, a private HOME and resource limits, but could read your files; their read-only claims are refused unless added with --trust",
			Fix:    "use a Linux kernel with Landlock enabled (5.13 or later, landlock in the lsm= boot list) to confine local plugins"})
	}
	root := cfg.Plugins.Dir
	if root == "" {
		root = cfg.Path("plugins")
	}
	list, err := plugins.List(root, sandbox.LandlockABI() > 0)
	if err != nil {
		return append(out, checkResult{Name: "plugins", Status: "warn", Detail: err.Error()})
	}
	if len(list) == 0 {
		return append(out, checkResult{Name: "plugins", Status: "info", Detail: "none added (omnibrain plugin add URL|DIR)"})
	}
	for _, p := range list {
		r := checkResult{Name: "plugins", Status: "ok", Detail: fmt.Sprintf("%s: %d tools from %s", p.Name, len(p.Tools), p.Source)}
		if p.State != plugins.StateOK {
			r.Status, r.Detail = "warn", p.Name+": "+p.State+": "+p.Detail
			r.Fix = "review it: omnibrain plugin update " + p.Name + " (or omnibrain plugin remove " + p.Name + ")"
		}
		out = append(out, r)
	}
	return out
}
