package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/internal/logging"
)

func runCommand() *command {
	var logLevel, listen string
	return &command{
		name:    "run",
		args:    "[--api-listen ADDR] [--log-level L]",
		summary: "run the daemon in the foreground (what the service runs)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&logLevel, "log-level", "", "log level `L`: debug, info, warn or error (default from config: info)")
			fs.StringVar(&listen, "api-listen", "", "also serve the API on the loopback address `ADDR`, e.g. 127.0.0.1:7423 (token in HOME/api-token)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("run takes no arguments")
			}
			// Flags go through the configuration, which checks them with
			// the rest and names them in its errors.
			e.logLevel, e.apiListen = logLevel, listen
			cfg, err := e.config()
			if err != nil {
				return err
			}
			tuneGC()
			privateUmask()
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

// daemonGCPercent is the daemon's GOGC. Its heap is mostly the vector
// index: long-lived and pointer-free, so cheap for the collector to mark,
// but at the default of 100 the heap grows by the index's whole size again
// before each collection, and stays resident. After a 100k import and
// idle, 25 keeps the daemon's anonymous memory at 48 MB instead of 70 MB
// (RSS 118 instead of 136), for collections that took 4% of its CPU time
// (GODEBUG=gctrace=1); at a million items the index is ten times bigger.
const daemonGCPercent = 25

// tuneGC sets the daemon's GOGC unless the environment sets one.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(daemonGCPercent)
	}
}
