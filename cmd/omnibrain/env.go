package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/internal/logging"
)

// env is what every command gets: the streams, the global flags and,
// lazily, the configuration and an API client.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	home     string
	json     bool
	timezone string
	// logLevel and apiListen are run's flags, applied last like --timezone.
	logLevel, apiListen string

	cfg     *config.Config
	client  *api.Client
	closers []func()
	colour  *bool // whether stdout gets colour; see style.go
}

var globalFlagNames = map[string]bool{"home": true, "json": true, "timezone": true}

func isGlobalFlag(name string) bool { return globalFlagNames[name] }

func (e *env) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&e.home, "home", e.home, "data directory `DIR`")
	fs.BoolVar(&e.json, "json", e.json, "print data as JSON")
	fs.StringVar(&e.timezone, "timezone", e.timezone, "IANA timezone `TZ`")
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// config loads the configuration once, creating the home directory.
func (e *env) config() (*config.Config, error) {
	if e.cfg != nil {
		return e.cfg, nil
	}
	home, err := config.ResolveHome(e.home, e.getenv)
	if err != nil {
		return nil, err
	}
	if err := config.EnsureHome(home); err != nil {
		return nil, err
	}
	cfg, err := config.Load(home, e.getenv, config.Flags{Timezone: e.timezone, LogLevel: e.logLevel, APIListen: e.apiListen})
	if err != nil {
		return nil, err
	}
	e.cfg = cfg
	return cfg, nil
}

// logger is the CLI's logger: warnings and errors on stderr as plain
// sentences, each once, secrets redacted (see logging.NewCLI).
func (e *env) logger(cfg *config.Config) *slog.Logger {
	return logging.NewCLI(e.stderr, cfg.Secrets())
}

// lenientConfig is config, except that problems in config.yaml do not
// stop a command the running daemon can answer: the daemon keeps the
// configuration it started with, and the owner is warned about the file
// (a typo saved while it runs must not make status and search fail).
func (e *env) lenientConfig(ctx context.Context) (*config.Config, error) {
	cfg, err := e.config()
	var ce *config.Error
	if err == nil || !errors.As(err, &ce) {
		return cfg, err
	}
	home, herr := config.ResolveHome(e.home, e.getenv)
	if herr != nil {
		return nil, err
	}
	c := dialDaemon(ctx, filepath.Join(home, api.SocketName))
	if c == nil {
		return nil, err
	}
	st, serr := c.Status(ctx)
	if serr != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "omnibrain: warning: %v\n(the running daemon keeps the configuration it started with; fix the file before it restarts)\n", err)
	cfg = config.Default(home)
	cfg.Timezone = st.Timezone
	if loc, lerr := time.LoadLocation(st.Timezone); lerr == nil {
		cfg.Location = loc
	}
	e.cfg, e.client = cfg, c
	return cfg, nil
}

// api returns a client for the running daemon, or, when none runs, for the
// same API served in-process over this home.
func (e *env) api(ctx context.Context) (*api.Client, error) {
	if e.client != nil {
		return e.client, nil
	}
	cfg, err := e.lenientConfig(ctx)
	if err != nil {
		return nil, err
	}
	if e.client != nil {
		return e.client, nil
	}
	if c := dialDaemon(ctx, cfg.Path(api.SocketName)); c != nil {
		e.client = c
		return c, nil
	}
	app, err := daemon.Open(ctx, cfg, daemon.Options{Log: e.logger(cfg)})
	if err != nil {
		return nil, err
	}
	c, stop := api.NewInProcessClient(app.Handler())
	e.closers = append(e.closers, func() { app.Close() }, stop)
	e.client = c
	return c, nil
}

// dialDaemon returns a client if a daemon answers on the socket.
func dialDaemon(ctx context.Context, socket string) *api.Client {
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	c := api.NewUnixClient(socket)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		return nil
	}
	return c
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printf writes human output.
func (e *env) printf(format string, args ...any) { fmt.Fprintf(e.stdout, format, args...) }

// apiError turns an API error into one for the user: the message without
// the API's class prefix, the code kept for --json.
func apiError(err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		// The API prefixes its class ("not found: …"); the rest already
		// says it in words.
		return &api.Error{Status: ae.Status, Code: ae.Code, Message: strings.TrimPrefix(ae.Message, "not found: ")}
	}
	return err
}
