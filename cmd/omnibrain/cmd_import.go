package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/collectors/importer"
)

// importShownFailures is how many failures the human summary lists.
const importShownFailures = 10

func importCommand() *command {
	var every time.Duration
	return &command{
		name: "import",
		args: "[--progress-every D] mbox|maildir|jsonl PATH",
		summary: "import a mail archive (an mbox such as a Google Takeout export, a maildir tree) or a JSONL file; " +
			"importing the same source again adds nothing",
		flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&every, "progress-every", time.Second, "every `D` (e.g. 5s), write a progress line when stderr is not a terminal (what it says was added is stored)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 {
				return usagef("import needs a format and a path: omnibrain import mbox|maildir|jsonl PATH")
			}
			format, path := args[0], args[1]
			if !slices.Contains(importer.Formats, format) {
				return usagef("import: unknown format %q (want %s)", format, strings.Join(importer.Formats, ", "))
			}
			if every <= 0 {
				return usagef("import: --progress-every must be positive")
			}
			abs, err := checkImportPath(format, path)
			if err != nil {
				return err
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			p := newImportProgress(e.stderr, every)
			sum, err := c.Import(ctx, api.ImportRequest{Format: format, Path: abs}, p.update)
			if err != nil {
				p.finish(-1)
				if ctx.Err() != nil {
					// Ctrl-C: say what became of the work, not "import stream: interrupt signal received".
					return fmt.Errorf("import interrupted: what it reported as added is stored; run the same command again to add the rest")
				}
				if errors.Is(err, api.ErrImportCut) {
					return fmt.Errorf("import cut short: %w; what it reported as added is stored: once the daemon runs again (omnibrain status), the same command adds the rest", err)
				}
				return apiError(err)
			}
			p.finish(sum.Added)
			if e.json {
				if err := e.printJSON(sum); err != nil {
					return err
				}
			} else {
				printImportSummary(e, sum)
			}
			var fail error
			switch {
			case sum.Seen == 0:
				// An empty directory or file is most likely the wrong path:
				// "0 seen" with exit status 0 would pass for an import.
				fail = fmt.Errorf("found nothing to import in %s: is it the right path, and a %s?", abs, format)
			case sum.Added+sum.Updated+sum.Unchanged == 0:
				fail = fmt.Errorf("nothing in %s could be imported as %s (see the reasons above)", abs, format)
			case len(sum.Failed) > 0:
				// Exit status 3: a script must not take it for a whole import.
				fail = partialError{fmt.Errorf("%d of %d could not be imported (listed above); the rest is stored", len(sum.Failed), sum.Seen)}
			}
			if fail != nil && e.json {
				var pe partialError
				if errors.As(fail, &pe) {
					return partialError{errSilent}
				}
				return errSilent
			}
			return fail
		},
	}
}

// checkImportPath resolves path against the current directory (the daemon
// has its own) and checks it fits the format before anything is sent.
func checkImportPath(format, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("import: %s does not exist", abs)
	}
	if err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	switch {
	case format == "maildir" && !fi.IsDir():
		other := "mbox"
		if ext := filepath.Ext(path); ext == ".jsonl" || ext == ".json" {
			other = "jsonl"
		}
		return "", usagef("import: %s is a file, not a maildir directory (for a single %s file use: omnibrain import %s %s)", abs, other, other, path)
	case format != "maildir" && fi.IsDir():
		hint := ""
		if format == "mbox" {
			hint = fmt.Sprintf(" (for a directory of messages use: omnibrain import maildir %s)", path)
		}
		return "", usagef("import: %s is a directory, not a %s file%s", abs, format, hint)
	}
	return abs, nil
}

// importProgress shows progress on stderr: a bar on a terminal, otherwise a
// plain line every so often (what it says as added is durable).
type importProgress struct {
	w        io.Writer
	every    time.Duration
	bar      *progressbar.ProgressBar
	terminal bool
	last     time.Time
	unit     string
	shown    api.ImportProgress // the last plain line written
}

func newImportProgress(w io.Writer, every time.Duration) *importProgress {
	f, ok := w.(*os.File)
	return &importProgress{w: w, every: every, terminal: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *importProgress) update(ev api.ImportProgress) {
	if !p.terminal {
		if time.Since(p.last) < p.every && ev.Done != ev.Total {
			return
		}
		p.last, p.shown = time.Now(), ev
		if ev.Total > 0 {
			fmt.Fprintf(p.w, "import: %d/%d %s read, %d added\n", ev.Done, ev.Total, ev.Unit, ev.Added)
		} else {
			fmt.Fprintf(p.w, "import: %d %s read, %d added\n", ev.Done, ev.Unit, ev.Added)
		}
		return
	}
	if p.bar == nil || p.unit != ev.Unit {
		p.unit = ev.Unit
		p.bar = progressbar.NewOptions64(ev.Total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionShowBytes(ev.Unit == "bytes"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionFullWidth(),
		)
	}
	// The count first: a frame drawn between the two calls must never show
	// more added than read (each call may draw one, throttled).
	p.bar.Set64(ev.Done)
	p.bar.Describe(fmt.Sprintf("importing, %d added", ev.Added))
}

// finish ends the progress display; after a successful import (added >= 0)
// the plain lines end with the final count: the API throttles its events
// and may never send one for the end, and a log whose last word is
// "0/153 read" reads as a stalled import.
func (p *importProgress) finish(added int) {
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
	if p.terminal || added < 0 || p.shown.Total == 0 || (p.shown.Done == p.shown.Total && p.shown.Added == added) {
		return
	}
	p.update(api.ImportProgress{Done: p.shown.Total, Total: p.shown.Total, Unit: p.shown.Unit, Added: added})
}

func printImportSummary(e *env, s *api.ImportSummary) {
	e.printf("imported %s (%s): %d seen in %.1fs\n", s.Path, s.Format, s.Seen, s.Seconds)
	e.printf("  added      %d\n  updated    %d\n  unchanged  %d\n  failed     %d\n", s.Added, s.Updated, s.Unchanged, len(s.Failed))
	printImportList(e, "failures:", s.Failed)
	if len(s.Undated) > 0 {
		printImportList(e, fmt.Sprintf("kept with a guessed date (%d had no date of their own; marked date_uncertain):", len(s.Undated)), s.Undated)
	}
	if len(s.Kept) > 0 {
		printImportList(e, fmt.Sprintf("kept the stored copy (%d messages already stored in a better copy):", len(s.Kept)), s.Kept)
	}
	if t := s.Triage; t != nil {
		e.printf("\ntriaged quietly (no notifications): %d %s of the last %d days — %d need your answer, %d worth knowing, %d ignored\n",
			t.Mails, plural(t.Mails, "mail", "mails"), t.Days, t.NeedAnswer, t.WorthKnowing, t.Ignored)
		if t.Undecided > 0 {
			e.printf("  %d not decided yet: triage tries again (omnibrain status shows why)\n", t.Undecided)
		}
		if t.NextBriefing != "" {
			e.printf("they will be in the next briefing (%s); to see them now: %s\n", t.NextBriefing, t.Show)
		} else {
			e.printf("to see them now: %s\n", t.Show)
		}
		if e.cfg != nil && len(e.cfg.Owner.Emails) == 0 {
			// Without the owner's addresses no mail reads as written to
			// them, and what asks them something ranks as if it did not.
			fmt.Fprintf(e.stderr, "omnibrain: owner.emails is not set in %s, so no mail counts as written to you "+
				"and fewer look like they need your answer; set it before you import more (see omnibrain help start)\n", e.cfg.Path("config.yaml"))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func printImportList(e *env, title string, list []api.ImportFailure) {
	if len(list) == 0 {
		return
	}
	e.printf("%s\n", title)
	for i, f := range list {
		if i == importShownFailures {
			e.printf("  … and %d more (omnibrain import --json lists them all)\n", len(list)-i)
			break
		}
		e.printf("  %s: %s\n", f.Where, f.Reason)
	}
}
