package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// checkResult is one doctor finding.
type checkResult struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, info, warn, fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func doctorCommand() *command {
	return &command{
		name:    "doctor",
		summary: "check the installation and configuration, with a fix for every problem",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("doctor takes no arguments")
			}
			results := runDoctor(ctx, e)
			if e.json {
				if err := e.printJSON(results); err != nil {
					return err
				}
			} else {
				printDoctor(e, results)
			}
			for _, r := range results {
				if r.Status == "fail" {
					return errSilent
				}
			}
			return nil
		},
	}
}

func printDoctor(e *env, results []checkResult) {
	marks := map[string]string{"ok": "✓", "info": "·", "warn": "!", "fail": "✗"}
	var warn, fail int
	for _, r := range results {
		e.printf("%s %-10s %s\n", marks[r.Status], r.Name, strings.ReplaceAll(r.Detail, "\n", "\n"+strings.Repeat(" ", 13)))
		if r.Fix != "" {
			e.printf("  %-10s fix: %s\n", "", r.Fix)
		}
		switch r.Status {
		case "warn":
			warn++
		case "fail":
			fail++
		}
	}
	switch {
	case fail > 0:
		e.printf("\n%d problem(s) need fixing, %d warning(s).\n", fail, warn)
	case warn > 0:
		e.printf("\nNo problems; %d warning(s).\n", warn)
	default:
		e.printf("\nAll good.\n")
	}
}

// runDoctor runs every check. It never stops at the first problem: a broken
// config is reported and the checks that do not need it still run.
func runDoctor(ctx context.Context, e *env) []checkResult {
	var out []checkResult
	add := func(r checkResult) { out = append(out, r) }

	home, err := config.ResolveHome(e.home, e.getenv)
	if err != nil {
		return []checkResult{{Name: "home", Status: "fail", Detail: err.Error(), Fix: "set OMNIBRAIN_HOME or pass --home DIR"}}
	}
	add(checkHome(home))

	cfg, err := config.Load(home, e.getenv, config.Flags{Timezone: e.timezone})
	if err != nil {
		fix := "edit " + filepath.Join(home, config.FileName) + " (every key is listed in the README)"
		if strings.Contains(err.Error(), "(set by ") {
			fix = "correct the variable or flag named above: it overrides " + filepath.Join(home, config.FileName)
		}
		add(checkResult{Name: "config", Status: "fail", Detail: err.Error(), Fix: fix})
		cfg = nil
	} else {
		detail := "defaults (no " + config.FileName + ")"
		if _, err := os.Stat(cfg.Path(config.FileName)); err == nil {
			detail = cfg.Path(config.FileName) + " is valid"
		}
		add(checkResult{Name: "config", Status: "ok", Detail: detail})
		add(checkResult{Name: "timezone", Status: "ok", Detail: fmt.Sprintf("%s (local time %s)", cfg.TimezoneName(), time.Now().In(cfg.Location).Format("Mon 15:04"))})
	}

	add(checkDatabase(ctx, filepath.Join(home, store.FileName)))
	out = append(out, checkDaemon(ctx, filepath.Join(home, api.SocketName))...)
	out = append(out, checkSecretFiles(home, cfg)...)
	add(checkDisk(home))
	if cfg != nil {
		add(checkEnvironment(e, home))
		out = append(out, checkIntegrations(cfg)...)
		out = append(out, checkGoogle(ctx, cfg, filepath.Join(home, api.SocketName), time.Now())...) // cmd_auth_doctor.go
		out = append(out, checkPlugins(cfg)...)                                                      // cmd_plugin.go
	}
	return out
}

// checkEnvironment warns about settings only this shell's OMNIBRAIN_*
// variables give: the service, which sees only the home, runs without them.
func checkEnvironment(e *env, home string) checkResult {
	missing, err := config.OnlyInEnvironment(home, e.getenv)
	if err != nil {
		return checkResult{Name: "environment", Status: "warn", Detail: err.Error()}
	}
	if len(missing) == 0 {
		return checkResult{Name: "environment", Status: "ok", Detail: "the home holds every setting: a service sees what this shell sees"}
	}
	var names []string
	for _, s := range missing {
		names = append(names, s.Name)
	}
	return checkResult{Name: "environment", Status: "warn",
		Detail: "set only in this shell, so a service does not see them: " + strings.Join(names, ", "),
		Fix:    "omnibrain service install --save-env (writes them into " + home + "; secrets in 0600 files)"}
}

func checkHome(home string) checkResult {
	fi, err := os.Stat(home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkResult{Name: "home", Status: "info", Detail: home + " does not exist yet; it is created (mode 0700) on first use"}
	case err != nil:
		return checkResult{Name: "home", Status: "fail", Detail: err.Error()}
	case !fi.IsDir():
		return checkResult{Name: "home", Status: "fail", Detail: home + " is not a directory", Fix: "point --home or OMNIBRAIN_HOME at a directory"}
	case fi.Mode().Perm()&0o077 != 0:
		return checkResult{Name: "home", Status: "warn", Detail: fmt.Sprintf("%s is readable by others (mode %04o); it holds your mail", home, fi.Mode().Perm()), Fix: "chmod 700 " + home}
	}
	return checkResult{Name: "home", Status: "ok", Detail: home}
}

func checkDatabase(ctx context.Context, path string) checkResult {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return checkResult{Name: "database", Status: "info", Detail: "no database yet; created on first use"}
	}
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return checkResult{Name: "database", Status: "fail", Detail: err.Error(), Fix: "if the file is damaged, move " + path + " aside and re-import; if FTS5 is missing, rebuild with make build"}
	}
	defer s.Close()
	var verdict string
	if err := s.DB().QueryRowContext(ctx, "PRAGMA quick_check").Scan(&verdict); err != nil || verdict != "ok" {
		return checkResult{Name: "database", Status: "fail", Detail: fmt.Sprintf("quick_check: %s %v", verdict, err), Fix: "stop the daemon, back up " + path + ", and run: sqlite3 " + path + " .recover"}
	}
	v, _ := s.SchemaVersion(ctx)
	counts, _ := s.CountItems(ctx)
	var n int64
	for _, c := range counts {
		n += c.Items
	}
	r := checkResult{Name: "database", Status: "ok", Detail: fmt.Sprintf("schema %d, FTS5 present, %d items, integrity ok", v, n)}
	if sp, err := s.Space(ctx); err == nil {
		if why := sp.WorthCompacting(); why != "" {
			r.Status, r.Detail, r.Fix = "info", r.Detail+"; worth compacting: "+why, "stop the daemon, run omnibrain compact, start it again"
		}
	}
	return r
}

// checkDaemon reports whether a daemon answers and, when one does, each
// component its health model reports down (fail) or degraded (warn), with
// the fix the component gives. Gmail and Calendar are checkGoogle's.
func checkDaemon(ctx context.Context, socket string) []checkResult {
	c := dialDaemon(ctx, socket)
	if c == nil {
		return []checkResult{{Name: "daemon", Status: "warn", Detail: "not running (commands still work on the data directly)", Fix: "omnibrain service install && omnibrain service start   (or run it in the foreground: omnibrain run)"}}
	}
	st, err := c.Status(ctx)
	if err != nil {
		return []checkResult{{Name: "daemon", Status: "fail", Detail: "running, but its status fails: " + apiError(err).Error(), Fix: "see the daemon's log (journalctl --user -u omnibrain, or HOME/logs on macOS)"}}
	}
	out := []checkResult{{Name: "daemon", Status: "ok", Detail: fmt.Sprintf("running (pid %d), API answering on %s; overall %s", st.PID, socket, st.Overall)}}
	for _, comp := range st.Components {
		if comp.Name == "gmail" || comp.Name == "calendar" {
			continue
		}
		switch comp.State {
		case health.Down:
			fix := comp.Detail
			if fix == "" {
				fix = "the daemon retries with backoff; see its log for the cause"
			}
			out = append(out, checkResult{Name: comp.Name, Status: "fail", Detail: "down: " + comp.LastError, Fix: fix})
		case health.Degraded:
			comp.LastSuccess, comp.Restarts = time.Time{}, 0 // doctor reports the problem only
			detail := strings.TrimSuffix("degraded: "+componentSummary(comp, time.Now()), ": ")
			out = append(out, checkResult{Name: comp.Name, Status: "warn", Detail: detail})
		}
	}
	return out
}

// checkSecretFiles flags token files that others can read.
func checkSecretFiles(home string, cfg *config.Config) []checkResult {
	paths := []string{filepath.Join(home, api.TokenFileName), filepath.Join(home, "google-token.json"), filepath.Join(home, "github-token")}
	if cfg != nil {
		for _, p := range []string{cfg.Telegram.TokenFile, cfg.GitHub.TokenFile, cfg.LLM.APIKeyFile, cfg.Embedder.APIKeyFile, cfg.Google.ClientSecretFile} {
			if p != "" {
				if !filepath.IsAbs(p) {
					p = filepath.Join(home, p)
				}
				paths = append(paths, p)
			}
		}
	}
	var out []checkResult
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if err := config.CheckPrivate(p, fi.Mode()); err != nil {
			out = append(out, checkResult{Name: "secrets", Status: "fail", Detail: err.Error(), Fix: "chmod 600 " + p})
		}
	}
	if len(out) == 0 {
		out = append(out, checkResult{Name: "secrets", Status: "ok", Detail: "token files are private (0600)"})
	}
	return out
}

func checkDisk(home string) checkResult {
	dir := home
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Dir(home)
	}
	free, err := store.FreeBytes(dir)
	if err != nil {
		return checkResult{Name: "disk", Status: "info", Detail: "free space unknown: " + err.Error()}
	}
	if free < 1<<30 {
		return checkResult{Name: "disk", Status: "warn", Detail: humanBytes(free) + " free where the data lives", Fix: "free some space: a mailbox index needs room to grow"}
	}
	return checkResult{Name: "disk", Status: "ok", Detail: humanBytes(free) + " free"}
}

// checkIntegrations says, for each outside service, whether it is set up
// and what to do if not.
func checkIntegrations(cfg *config.Config) []checkResult {
	var out []checkResult
	switch {
	case !cfg.Telegram.Token.IsSet():
		out = append(out, checkResult{Name: "telegram", Status: "warn", Detail: "no bot token: no approvals or briefings by Telegram (the CLI still works)", Fix: "create a bot with @BotFather, then set OMNIBRAIN_TELEGRAM_TOKEN or telegram.token_file in config.yaml"})
	case cfg.Telegram.OwnerID == 0:
		out = append(out, checkResult{Name: "telegram", Status: "info", Detail: "bot token set; owner not set in config (pairing may have bound one)", Fix: "omnibrain telegram pair, then send /start CODE to your bot (or set OMNIBRAIN_TELEGRAM_OWNER_ID)"})
	default:
		out = append(out, checkResult{Name: "telegram", Status: "ok", Detail: fmt.Sprintf("bot token set, owner %d", cfg.Telegram.OwnerID)})
	}
	if cfg.GitHub.Token.IsSet() {
		out = append(out, checkResult{Name: "github", Status: "ok", Detail: "token set (" + cfg.GitHub.APIURL + ")"})
	} else {
		out = append(out, checkResult{Name: "github", Status: "info", Detail: "not connected", Fix: "omnibrain auth github"})
	}
	switch cfg.LLM.Provider {
	case "", "none":
		out = append(out, checkResult{Name: "llm", Status: "info", Detail: "no model configured: search, triage, briefings and patterns work; chat answers with search results (a local Ollama is used if one answers)", Fix: "set OMNIBRAIN_LLM_PROVIDER (openai, anthropic, ollama), OMNIBRAIN_LLM_MODEL and OMNIBRAIN_LLM_API_KEY"})
	case "openai", "anthropic":
		switch {
		case !cfg.LLM.APIKey.IsSet() && cfg.LLM.BaseURL == "":
			out = append(out, checkResult{Name: "llm", Status: "fail", Detail: cfg.LLM.Provider + " needs an API key", Fix: "set OMNIBRAIN_LLM_API_KEY or llm.api_key_file"})
		case cfg.LLM.Model == "":
			// The router refuses this too, and the daemon then runs without
			// a model: say so here rather than tick it.
			out = append(out, checkResult{Name: "llm", Status: "fail", Detail: cfg.LLM.Provider + " needs a model name; without one the daemon runs with no model", Fix: "set OMNIBRAIN_LLM_MODEL or llm.model (e.g. gpt-4o-mini)"})
		default:
			out = append(out, checkResult{Name: "llm", Status: "ok", Detail: cfg.LLM.Provider + " " + cfg.LLM.Model})
		}
	default:
		model := cfg.LLM.Model
		if model == "" {
			model = "(the first model the server lists)"
		}
		out = append(out, checkResult{Name: "llm", Status: "ok", Detail: cfg.LLM.Provider + " " + model})
	}
	if models := unpricedModels(cfg); len(models) > 0 {
		p, _ := router.PriceFor(nil, "openai", "https://unknown.example", models[0])
		detail := fmt.Sprintf("no known price for %s: its calls count at the most expensive known rate ($%g in, $%g out per million tokens)",
			strings.Join(models, ", "), p.InputPerMTok, p.OutputPerMTok)
		if cfg.LLM.DailyBudgetUSD > 0 {
			detail += ", so the daily budget may pause background work early"
		}
		out = append(out, checkResult{Name: "budget", Status: "warn", Detail: detail,
			Fix: "add llm.prices." + models[0] + ": {input_per_mtok: …, output_per_mtok: …} to config.yaml (or check the model name)"})
	}
	return out
}

// unpricedModels lists the hosted models neither llm.prices nor the
// built-in table knows: the router counts them at the most expensive
// known rate, and a mistyped model name should not do that silently.
func unpricedModels(cfg *config.Config) []string {
	providers := []config.Provider{{Type: cfg.LLM.Provider, BaseURL: cfg.LLM.BaseURL, Model: cfg.LLM.Model}}
	providers = append(providers, cfg.LLM.Providers...)
	var out []string
	for _, p := range providers {
		if p.Type != "openai" && p.Type != "anthropic" || p.Model == "" || slices.Contains(out, p.Model) {
			continue
		}
		if _, src := router.PriceFor(cfg.LLM.Prices, p.Type, p.BaseURL, p.Model); src == router.PriceUnknown {
			out = append(out, p.Model)
		}
	}
	return out
}
