package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/internal/logging"
)

func runCommand() *command {
	var logLevel, listen string
	return &command{
		name:    "run",
		summary: "run the daemon in the foreground (what the service runs)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&logLevel, "log-level", "", "debug, info, warn or error (default from config: info)")
			fs.StringVar(&listen, "api-listen", "", "also serve the API on this loopback address, e.g. 127.0.0.1:7423 (token in HOME/api-token)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("run takes no arguments")
			}
			cfg, err := e.config()
			if err != nil {
				return err
			}
			if logLevel != "" {
				cfg.LogLevel = logLevel
			}
			if listen != "" {
				cfg.API.Listen = listen
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			log := logging.New(e.stderr, cfg.LogLevel, cfg.Secrets())
			// A library writing with the standard log package goes through
			// the same handler, so its lines are redacted too.
			slog.SetDefault(log)
			app, err := daemon.Open(ctx, cfg, daemon.Options{Log: log})
			if err != nil {
				return err
			}
			defer app.Close()
			return app.Run(ctx)
		},
	}
}
