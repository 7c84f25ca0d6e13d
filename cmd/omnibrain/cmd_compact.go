package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/store"
)

func compactCommand() *command {
	return &command{
		name: "compact",
		summary: "rewrite the database: gives back the space deleted and merged items left, " +
			"and moves an older home to the larger pages new homes use; run it with the daemon stopped",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("compact takes no arguments")
			}
			home, err := config.ResolveHome(e.home, e.getenv)
			if err != nil {
				return err
			}
			path := filepath.Join(home, store.FileName)
			fi, err := os.Stat(path)
			if errors.Is(err, fs.ErrNotExist) {
				if e.json { // zero bytes before and after
					return e.printJSON(store.Compaction{Path: path})
				}
				e.printf("nothing to compact: %s has no database yet\n", home)
				return nil
			} else if err != nil {
				return err
			}
			if c := dialDaemon(ctx, filepath.Join(home, api.SocketName)); c != nil {
				return errors.New("the daemon is running on " + home + ": stop it first (omnibrain service stop, or end omnibrain run), compact, then start it again")
			}
			fmt.Fprintf(e.stderr, "compacting %s (%s); for a large home this takes a while, and Ctrl-C stops it leaving the database as it was\n", path, humanBytes(fi.Size()))
			c, err := daemon.Compact(ctx, home)
			if errors.Is(err, store.ErrInUse) {
				return fmt.Errorf("another omnibrain command is using %s, so nothing was changed: compact when it has finished (%w)", path, err)
			}
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("compaction stopped; the database is as it was (%w)", err)
				}
				return err
			}
			if e.json {
				return e.printJSON(c)
			}
			e.printf("compacted %s in %s: %s -> %s", c.Path, c.Took.Round(100*time.Millisecond), humanBytes(c.BytesBefore), humanBytes(c.BytesAfter))
			if c.PageAfter != c.PageBefore {
				e.printf(", pages of %s -> %s", humanBytes(int64(c.PageBefore)), humanBytes(int64(c.PageAfter)))
			}
			e.printf("\n")
			return nil
		},
	}
}
