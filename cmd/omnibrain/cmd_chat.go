package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
)

func chatCommand() *command {
	var session string
	return &command{
		name:    "chat",
		args:    "[--session ID] [--json] MESSAGE",
		summary: "ask omnibrain about your mail, calendar and GitHub; the answer streams and cites its sources",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&session, "session", "", "continue the conversation with this session `ID` (printed after each answer)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			text := strings.TrimSpace(strings.Join(args, " "))
			if text == "" {
				return usagef("chat needs a message, e.g. omnibrain chat \"what did Alice say about the budget?\"")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			var onEvent func(agent.Event)
			if !e.json {
				onEvent = func(ev agent.Event) { printChatEvent(e, ev) }
			}
			ans, err := c.Chat(ctx, api.ChatRequest{Message: text, Session: session}, onEvent)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(ans)
			}
			e.printf("\n")
			if len(ans.Citations) > 0 {
				e.printf("\nSources:\n")
				for _, ci := range ans.Citations {
					e.printf("  [%d] %s — %s, %s (id %s)\n", ci.N, ci.Title, ci.Source, ci.Time.Local().Format("2006-01-02 15:04"), ci.ID)
				}
			}
			for _, p := range ans.Proposals {
				e.printf("\nProposal %s waits for your approval: %s (omnibrain proposals show %s)\n", p.ID, p.Title, p.ID)
			}
			fmt.Fprintf(e.stderr, "\nsession %s (continue with: omnibrain chat --session %s …)\n", ans.SessionID, ans.SessionID)
			return nil
		},
	}
}

// printChatEvent streams the answer to stdout and tool activity to stderr,
// so stdout holds only the answer.
func printChatEvent(e *env, ev agent.Event) {
	switch ev.Type {
	case agent.EventText:
		e.printf("%s", ev.Text)
	case agent.EventToolStart:
		fmt.Fprintf(e.stderr, "· %s %s\n", ev.Tool.Name, ev.Tool.Arguments)
	case agent.EventToolEnd:
		if ev.Tool.Status != agent.StatusOK {
			fmt.Fprintf(e.stderr, "· %s: %s\n", ev.Tool.Name, ev.Tool.Status)
		}
	case agent.EventError:
		fmt.Fprintf(e.stderr, "! %s\n", ev.Text)
	}
}
