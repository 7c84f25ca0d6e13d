package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/omnibrain/omnibrain/config"
)

func helpCommand() *command {
	return &command{
		name:    "help",
		args:    "[COMMAND | TOPIC]",
		summary: "show the commands, one command's flags, or a topic: " + strings.Join(topicNames(), ", "),
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				printUsage(e.stdout)
				return nil
			}
			if len(args) > 1 {
				return usagef("usage: omnibrain help [COMMAND | TOPIC]")
			}
			for _, c := range commands() {
				if c.name == args[0] {
					printCommandUsage(e.stdout, c, c.flagSet(e))
					return nil
				}
			}
			for _, t := range helpTopics() {
				if t.name == args[0] {
					fmt.Fprintf(e.stdout, "%s\n\n%s", e.style(bold, t.title), t.text())
					return nil
				}
			}
			return usagef("help: no command or topic %q%s; topics: %s", args[0], didYouMean(args[0], helpWords()), strings.Join(topicNames(), ", "))
		},
	}
}

// helpTopic is a page of `omnibrain help TOPIC`: what cuts across commands.
type helpTopic struct {
	name, title string
	text        func() string
}

func helpTopics() []helpTopic {
	return []helpTopic{
		{"start", "The first ten minutes: import, search, briefing, explain, chat", func() string { return topicStart }},
		{"queries", "How search reads a query", func() string { return topicQueries }},
		{"environment", "OMNIBRAIN_* environment variables", topicEnvironment},
		{"exit-status", "Exit statuses and --json errors", func() string { return topicExitStatus }},
		{"approval", "How proposals are approved", func() string { return topicApproval }},
		{"terminal", "Colour, highlighting and shell completion", func() string { return topicTerminal }},
	}
}

func topicNames() []string {
	var names []string
	for _, t := range helpTopics() {
		names = append(names, t.name)
	}
	return names
}

// helpWords is what may follow `omnibrain help`: commands and topics.
func helpWords() []string {
	var words []string
	for _, c := range commands() {
		words = append(words, c.name)
	}
	return append(words, topicNames()...)
}

// printTopicList ends the top-level usage with the topics.
func printTopicList(w io.Writer) {
	fmt.Fprintf(w, "%s.\n", wrap("Help topics (omnibrain help TOPIC): "+strings.Join(topicNames(), ", "), 0))
}

const topicStart = `No account and no model are needed. First say which addresses are yours,
so omnibrain knows which mail is written to you, in ~/.omnibrain/config.yaml:

  owner:
    emails: [ada@example.com]

Then import a mail archive (an mbox from Thunderbird, Apple Mail or a
Google Takeout, a maildir, or JSONL):

  omnibrain import mbox ~/Downloads/Inbox.mbox

Mail of the last 7 days is triaged quietly (no notifications): what asks
for an answer goes into the next briefing, and the import says so.

  omnibrain search "budget from Bob last week"
  omnibrain briefing morning          # what needs you today
  omnibrain explain ID                # why omnibrain decided what it did
  omnibrain chat "what did Lily ask me about Friday?"

The README's "The first ten minutes" shows what each prints. Without a
model, chat answers with the items that best match the question; with one
(see omnibrain help environment) it writes an answer citing them.
Start the daemon (omnibrain run, or omnibrain service install) to have mail
collected and briefings made on schedule; omnibrain status says what runs.
`

const topicQueries = `A query is words: an item matches if it holds any of them, and items
holding more of them, and rarer ones, rank higher. Words also match by their
stem (reply, replied, replies) and by meaning (the vector index), so a hit
may hold none of the words; it is then marked "by meaning".

  "quarterly forecast"   a phrase: these words next to each other
  pipe*                  every word starting with pipe
  yesterday, last week, on Dec 30, in March, 2001-05-14
                         date words narrow the search to that period; if
                         nothing in it matches, you are told so and shown
                         what matches at other times

Filters: --since and --until (RFC 3339 or YYYY-MM-DD), --source (gmail,
mbox, maildir, calendar, github, email, event, …), --person (a name as
whole words in any order, case or accents, "Buy, Rick" for Rick Buy; or an
address or a part of one), --mode fts|vector|hybrid, -n K. Matches in a
snippet are shown in bold on a terminal.
`

func topicEnvironment() string {
	var b strings.Builder
	b.WriteString("Each variable overrides its config.yaml key; a flag overrides both.\n\n")
	fmt.Fprintf(&b, "  %-31s %s\n", "OMNIBRAIN_HOME", "the home directory (default ~/.omnibrain)")
	for _, s := range config.EnvSettings() {
		key := s.Key
		if s.Secret() {
			key += " (secret)"
		}
		fmt.Fprintf(&b, "  %-31s %s\n", s.Name, key)
	}
	b.WriteString("\nA secret given by a variable is saved by service install into its 0600\nfile in the home; NO_COLOR (any value) turns colour off.\n")
	return b.String()
}

const topicExitStatus = `  0  success
  1  failure
  2  a mistake in the command line (an unknown command, flag or --source)
  3  done, but part of it failed: an import that stored what it could read
     and lists the messages it could not

With --json, stdout holds one JSON document whatever happens: the data, or
one error object {"error": {"code", "message"}}. Codes: usage, partial,
not_found, config (with "file" and "problems", each with its line), failed.
`

const topicApproval = `Nothing leaves this machine without your approval of that exact action.
The agent, triage and the proactive engine only propose (a reply, a mail,
a calendar change, a GitHub comment, a plugin call); you decide with a
button in Telegram or here:

  omnibrain proposals              what waits (--state to filter)
  omnibrain proposals show ID      the whole payload and its audit log
  omnibrain approve ID             send it; --hash H approves only the
                                   payload you reviewed
  omnibrain undo ID                during the send delay (10s by default)
  omnibrain reject ID
  omnibrain edit ID                a new text is a new proposal

Warnings (a recipient taken from a mail, an address you never wrote to, a
look-alike address) are shown before you approve. Proposals expire after
24h (approval.expiry).
`

const topicTerminal = `On a terminal, omnibrain shows headings and search matches in bold and
warnings in colour. Set NO_COLOR (any value) or TERM=dumb to turn that off;
output into a pipe or a file and --json are never coloured.

Shell completion of commands, their words and flags:

  bash, now:     source <(omnibrain completion bash)
        always:  omnibrain completion bash \
                   > ~/.local/share/bash-completion/completions/omnibrain
  zsh, now:      source <(omnibrain completion zsh)
        always:  omnibrain completion zsh > "${fpath[1]}/_omnibrain"
  fish, now:     omnibrain completion fish | source
        always:  omnibrain completion fish \
                   > ~/.config/fish/completions/omnibrain.fish
`
