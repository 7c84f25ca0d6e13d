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
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/internal/suggest"
)

// version is set at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal starts a graceful stop; a second one kills.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "omnibrain: %v\n", err)
			os.Exit(2)
		}
		if !errors.Is(err, errSilent) {
			fmt.Fprintf(os.Stderr, "omnibrain: %v\n", err)
		}
		os.Exit(1)
	}
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

// commands lists every subcommand, in the order `omnibrain --help` shows them.
func commands() []*command {
	return []*command{
		runCommand(),
		statusCommand(),
		doctorCommand(),
		serviceCommand(),
		importCommand(),
		searchCommand(),
		chatCommand(),
		memoryCommand(),
		proposalsCommand(),
		approveCommand(),
		rejectCommand(),
		editCommand(),
		explainCommand(),
		briefingCommand(),
		telegramCommand(),
		usageCommand(),
		authCommand(),
		collectCommand(),
		versionCommand(),
	}
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errSilent is returned when the error has already been printed.
var errSilent = errors.New("failed")

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	defer e.close()
	daemon.Version = version

	global := flag.NewFlagSet("omnibrain", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	e.globalFlags(global)
	// The spelling most tools accept; the command is `omnibrain version`.
	showVersion := global.Bool("version", false, "print the version")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return nil
		}
		return usagef("%v (see omnibrain --help)", err)
	}
	rest := global.Args()
	if *showVersion && len(rest) == 0 {
		rest = []string{"version"}
	}
	if len(rest) == 0 {
		printUsage(stderr)
		return usagef("no command given")
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 {
			name, rest = rest[1], []string{rest[1], "--help"}
		} else {
			printUsage(stdout)
			return nil
		}
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		fs := flag.NewFlagSet("omnibrain "+c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		e.globalFlags(fs)
		if c.flags != nil {
			c.flags(fs)
		}
		pos, err := parseInterspersed(fs, rest[1:])
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, c, fs)
			return nil
		}
		if err != nil {
			return usagef("%s: %v (see omnibrain %s --help)", c.name, err, c.name)
		}
		return c.run(ctx, e, pos)
	}
	names := make([]string, 0, len(commands()))
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := suggest.Closest(name, names); s != "" {
		return usagef("unknown command %q: did you mean %q? (see omnibrain --help)", name, s)
	}
	return usagef("unknown command %q (see omnibrain --help)", name)
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

Run 'omnibrain <command> --help' for a command's flags.
`)
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
