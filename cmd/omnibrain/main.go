// Command omnibrain is a proactive personal agent: a daemon that watches
// mail, calendar and GitHub, and a CLI that talks to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/internal/suggest"
	"github.com/omnibrain/omnibrain/plugins/sandbox"
)

// version is set at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// The plugin sandbox's helper is this binary run with a hidden
	// command: it confines itself and becomes the plugin (plugins/sandbox).
	sandbox.RunIfHelper()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal starts a graceful stop; a second one kills.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintf(os.Stderr, "omnibrain: %v\n", err)
	}
	os.Exit(exitStatus(err))
}

// Exit statuses, as --help and the README document them.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2 // a mistake in the command line
	exitPartial = 3 // done, but part of it failed (an import with messages it could not read)
)

func exitStatus(err error) int {
	var ue usageError
	var pe partialError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &pe):
		return exitPartial
	}
	return exitFailure
}

// command is one CLI subcommand.
type command struct {
	name    string
	args    string // usage after the name, e.g. "[-n K] QUERY"
	summary string
	// flags registers the command's own flags; nil if it has none.
	flags func(fs *flag.FlagSet)
	run   func(ctx context.Context, e *env, args []string) error
}

// flagSet is the command's flags with the global ones, bound to e.
func (c *command) flagSet(e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("omnibrain "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.globalFlags(fs)
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// commands lists every subcommand, in the order `omnibrain --help` shows them.
func commands() []*command {
	return []*command{
		runCommand(),
		statusCommand(),
		doctorCommand(),
		serviceCommand(),
		compactCommand(),
		importCommand(),
		searchCommand(),
		chatCommand(),
		memoryCommand(),
		proposalsCommand(),
		notificationsCommand(),
		approveCommand(),
		rejectCommand(),
		undoCommand(),
		editCommand(),
		explainCommand(),
		briefingCommand(),
		telegramCommand(),
		usageCommand(),
		authCommand(),
		collectCommand(),
		pluginCommand(),
		completionCommand(),
		helpCommand(),
		versionCommand(),
	}
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errSilent is returned when the error has already been printed.
var errSilent = errors.New("failed")

// partialError is a command that did its work but not all of it: exit
// status 3, so a script can tell it from both success and failure.
type partialError struct{ err error }

func (e partialError) Error() string { return e.err.Error() }
func (e partialError) Unwrap() error { return e.err }

// shownError is an error already printed as JSON; it keeps err's exit
// status and is not printed again.
type shownError struct{ err error }

func (e shownError) Error() string   { return e.err.Error() }
func (e shownError) Unwrap() []error { return []error{e.err, errSilent} }

// jsonError is the one JSON object an error is under --json: the API's
// error shape, {"error": {"code", "message"}}, with a config file's
// problems listed.
type jsonError struct {
	Error struct {
		Code     string           `json:"code"`
		Message  string           `json:"message"`
		File     string           `json:"file,omitempty"`
		Problems []config.Problem `json:"problems,omitempty"`
	} `json:"error"`
}

func newJSONError(err error) jsonError {
	var j jsonError
	j.Error.Message = err.Error()
	var ue usageError
	var pe partialError
	var ce *config.Error
	var ae *api.Error
	switch {
	case errors.As(err, &ue):
		j.Error.Code = "usage"
	case errors.As(err, &pe):
		j.Error.Code = "partial"
	case errors.As(err, &ce):
		j.Error.Code = "config"
		j.Error.File, j.Error.Problems = ce.File, ce.Problems
	case errors.As(err, &ae) && ae.Code != "":
		j.Error.Code = ae.Code
	default:
		j.Error.Code = "failed"
	}
	return j
}

// run runs the command line args. Under --json, an error is printed as
// one JSON object on stdout (the returned error then says it was shown).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	defer e.close()
	daemon.Version = version
	err := dispatch(ctx, e, args)
	if err == nil || !e.json || errors.Is(err, errSilent) {
		return err
	}
	if perr := e.printJSON(newJSONError(err)); perr != nil {
		return err
	}
	return shownError{err}
}

// dispatch parses the global flags and runs the command.
func dispatch(ctx context.Context, e *env, args []string) error {

	global := flag.NewFlagSet("omnibrain", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	e.globalFlags(global)
	// The spelling most tools accept; the command is `omnibrain version`.
	showVersion := global.Bool("version", false, "print the version")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(e.stdout)
			return nil
		}
		return usagef("%v (see omnibrain --help)", err)
	}
	rest := global.Args()
	if *showVersion && len(rest) == 0 {
		rest = []string{"version"}
	}
	if len(rest) == 0 {
		printUsage(e.stderr)
		return usagef("no command given")
	}
	name := rest[0]
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		fs := c.flagSet(e)
		pos, err := parseInterspersed(fs, rest[1:])
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(e.stdout, c, fs)
			return nil
		}
		if err != nil {
			return usagef("%s: %v (see omnibrain %s --help)", c.name, err, c.name)
		}
		return c.run(ctx, e, pos)
	}
	// The command's flags were never parsed: an error still honours --json.
	e.json = e.json || slices.Contains(rest, "--json") || slices.Contains(rest, "-json")
	names := make([]string, 0, len(commands()))
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := suggest.Closest(name, names); s != "" {
		return usagef("unknown command %q: did you mean %q? (see omnibrain --help)", name, s)
	}
	return usagef("unknown command %q (see omnibrain --help)", name)
}

// didYouMean is a hint naming the candidate word most likely meant, or "".
func didYouMean(word string, candidates []string) string {
	if s := suggest.Closest(word, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments, so `omnibrain search budget --json` works; "--" ends flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `omnibrain — a proactive personal agent that acts only with your approval.

Usage:
  omnibrain [--home DIR] [--json] <command> [arguments]

Commands:
`)
	cmds := commands()
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, wrap(c.summary, width+4))
	}
	fmt.Fprint(w, `
Global flags (before or after the command):
  --home DIR     data directory (default $OMNIBRAIN_HOME or ~/.omnibrain)
  --json         print data as JSON
  --timezone TZ  IANA timezone (default $OMNIBRAIN_TIMEZONE or the system zone)

Configuration: HOME/config.yaml, then OMNIBRAIN_* environment variables
(OMNIBRAIN_TELEGRAM_TOKEN, OMNIBRAIN_LLM_PROVIDER, …), then flags; see the
README. 'omnibrain doctor' checks it and says how to fix what is wrong.

Exit status: 0 success, 1 failure, 2 a mistake in the command line, 3 done
but partly failed (an import with messages it could not read). With --json,
an error is one JSON object on stdout: {"error": {"code", "message"}}.

Run 'omnibrain <command> --help' for a command's flags.
`)
	printTopicList(w)
}

func printCommandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	prefix := "Usage: omnibrain " + c.name + " "
	fmt.Fprintf(w, "%s\n\n%s\n", strings.TrimSpace(prefix+wrap(c.args, len(prefix))), wrap(c.summary, 0))
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		if isGlobalFlag(f.Name) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name // as the usage line writes it: -n K
		}
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		line += "\n        " + wrap(usage, 8)
		lines = append(lines, line)
	})
	if len(lines) > 0 { // VisitAll goes in name order
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(lines, "\n"))
	}
	fmt.Fprintln(w, "\nGlobal flags: --home DIR, --json, --timezone TZ (see omnibrain --help)")
}

// helpWidth is the width help text is wrapped to: a standard terminal.
const helpWidth = 80

// wrap breaks text into lines of at most helpWidth columns, for text that
// starts at column indent; continuation lines are indented to it.
func wrap(text string, indent int) string {
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case col+1+n > helpWidth:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}
