package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

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
			// On a terminal the answer streams; elsewhere (a pipe, a
			// script) stdout gets the final answer once, so a model call
			// the router retried midway never leaves a half answer before it.
			out, ok := e.stdout.(*os.File)
			live := ok && term.IsTerminal(int(out.Fd()))
			var onEvent func(agent.Event)
			if !e.json {
				onEvent = func(ev agent.Event) { printChatEvent(e, ev, live) }
			}
			ans, err := c.Chat(ctx, api.ChatRequest{Message: text, Session: session}, onEvent)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				if err := e.printJSON(ans); err != nil || ans.ModelError == "" {
					return err
				}
				return errSilent // model_error in the answer says it
			}
			if !live {
				e.printf("%s", e.highlight(ans.Text))
			}
			e.printf("\n")
			if len(ans.Citations) > 0 {
				e.printf("\nSources:\n")
				for _, ci := range ans.Citations {
					e.printf("  [%d] %s — %s, %s (id %s)\n", ci.N, ci.Title, ci.Source, ci.Time.In(e.location()).Format("2006-01-02 15:04"), ci.ID)
				}
			}
			for _, p := range ans.Proposals {
				e.printf("\nProposal %s waits for your approval: %s (omnibrain proposals show %s)\n", p.ID, p.Title, p.ID)
			}
			fmt.Fprintf(e.stderr, "\nsession %s (continue with: omnibrain chat --session %s …)\n", ans.SessionID, ans.SessionID)
			if ans.ModelError != "" {
				// The answer says why (once); a script must not take the
				// search results for the model's answer.
				return errors.New("chat: the language model did not answer; the best matches from your data are shown instead")
			}
			return nil
		},
	}
}

// printChatEvent shows the run on stderr (tools, plan, phases, errors)
// and, live, streams the answer to stdout, so stdout holds only the answer.
func printChatEvent(e *env, ev agent.Event, live bool) {
	switch ev.Type {
	case agent.EventText:
		switch {
		case ev.Reset:
			// The router retries a call that broke off: its text starts over.
			if live {
				e.printf("\n")
			}
			fmt.Fprintf(e.stderr, "· the model's answer broke off; it starts over\n")
		case live:
			// A snippet's marks are highlighted when a piece holds
			// the whole mark (the search results of a no-model
			// answer come in one piece).
			e.printf("%s", e.highlight(ev.Text))
		}
	case agent.EventToolStart:
		fmt.Fprintf(e.stderr, "· %s %s\n", ev.Tool.Name, ev.Tool.Arguments)
	case agent.EventToolStatus:
		fmt.Fprintf(e.stderr, "· %s\n", ev.Text)
	case agent.EventToolEnd:
		if ev.Tool.Status != agent.StatusOK {
			fmt.Fprintf(e.stderr, "· %s: %s\n", ev.Tool.Name, ev.Tool.Status)
		}
	case agent.EventPlan:
		names := make([]string, len(ev.Plan.Phases))
		for i, ph := range ev.Plan.Phases {
			names[i] = ph.Name
		}
		fmt.Fprintf(e.stderr, "· plan (%s): %s\n", ev.Plan.Template, strings.Join(names, " → "))
	case agent.EventPhaseComplete:
		fmt.Fprintf(e.stderr, "· %s done: %s\n", ev.Phase.Name, ev.Phase.Reflection)
	case agent.EventError:
		// A failed model call is retried, and if the model never answers
		// the answer says so: the attempts themselves are not news.
		if !strings.HasPrefix(ev.Text, "model: ") {
			fmt.Fprintf(e.stderr, "! %s\n", ev.Text)
		}
	}
}
