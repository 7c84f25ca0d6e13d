package telegram

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/health"
)

const helpText = `I watch your mail, calendar and GitHub, and I never send anything without your approval.

/proposals — proposals waiting for you, with their buttons
/briefing [morning|evening|weekly] — a briefing now
/search WORDS — search your data
/memory — what I remember about you (forget with a button)
/status — how omnibrain is doing
/settings — what is configured
/quiet [2h|off] — hold notifications (critical ones still come)
/help — this

Anything else you write goes to the chat.`

// maxShown is how many waiting proposals /proposals shows in full.
const maxShown = 5

func (b *Bot) command(ctx context.Context, cmd, args string) {
	switch cmd {
	case "start", "help":
		b.reply(ctx, helpText)
	case "proposals":
		b.showProposals(ctx)
	case "search":
		if args == "" {
			b.reply(ctx, "What should I search for? /search WORDS")
			return
		}
		if b.o.Search == nil {
			b.reply(ctx, "Search is not available in this setup.")
			return
		}
		b.replyHTML(ctx, b.searchHTML(ctx, args))
	case "memory":
		b.showMemory(ctx)
	case "status":
		b.replyHTML(ctx, b.statusHTML(ctx))
	case "settings":
		b.reply(ctx, b.settingsText(ctx))
	case "quiet":
		b.quiet(ctx, args)
	case "briefing":
		if b.o.Briefer == nil {
			b.reply(ctx, "Briefings are not available in this setup yet.")
			return
		}
		kind := args
		if kind == "" {
			kind = "morning"
		}
		b.enqueue(ctx, func(ctx context.Context) {
			text, err := b.o.Briefer.Briefing(ctx, kind)
			if err != nil {
				b.reply(ctx, "Could not write the briefing: "+truncate(err.Error(), 300))
				return
			}
			if text == "" {
				b.reply(ctx, "Your "+kind+" briefing was just sent to you above.")
				return
			}
			b.reply(ctx, text)
		})
	case "cancel":
		b.reply(ctx, "OK.")
	default:
		b.reply(ctx, "I do not know /"+cmd+". /help lists what I can do.")
	}
}

// showProposals sends the waiting proposals whole, with their buttons.
func (b *Bot) showProposals(ctx context.Context) {
	ps, err := b.o.Gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StatePending}})
	if err != nil {
		b.reply(ctx, "Could not read proposals: "+err.Error())
		return
	}
	if len(ps) == 0 {
		b.reply(ctx, "Nothing is waiting for your approval.")
		return
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Created.Before(ps[j].Created) })
	for i, p := range ps {
		if i == maxShown {
			b.reply(ctx, fmt.Sprintf("…and %d more: omnibrain proposals lists them all.", len(ps)-maxShown))
			break
		}
		ids, err := b.send(ctx, renderProposal(p, b.o.Location), buttons(p), false)
		if err != nil {
			b.log.Warn("telegram: could not show a proposal", "proposal", p.ID, "err", err)
			return
		}
		b.recordMessage(ctx, p, ids)
	}
}

func (b *Bot) recordMessage(ctx context.Context, p *approval.Proposal, ids []int) {
	if len(ids) == 0 {
		return
	}
	if err := b.state.addMessage(ctx, shown(p, b.Owner(), ids[len(ids)-1])); err != nil {
		b.log.Error("telegram: could not record the proposal message", "proposal", p.ID, "err", err)
		return
	}
	// Decided while the message was on its way (the owner answered in
	// Gmail, say): the refresher ran before the message was recorded, so
	// it is brought back to edit it.
	if cur, err := b.o.Gate.Get(ctx, p.ID); err == nil && cur.State != approval.StatePending {
		b.proposalChanged(cur)
	}
}

func (b *Bot) statusHTML(ctx context.Context) string {
	var sb strings.Builder
	comps := b.o.Health.Snapshot()
	fmt.Fprintf(&sb, "<b>omnibrain</b>: %s\n", health.Overall(comps))
	for _, c := range comps {
		line := fmt.Sprintf("%s: %s", c.Name, c.State)
		if c.Detail != "" {
			line += " — " + c.Detail
		} else if c.LastError != "" && c.State != health.OK {
			line += " — " + c.LastError
		}
		sb.WriteString(esc(truncate(line, 300)) + "\n")
	}
	if ps, err := b.o.Gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StatePending, approval.StateSnoozed}}); err == nil {
		fmt.Fprintf(&sb, "\nWaiting for you: %d proposal(s)\n", len(ps))
	}
	if b.o.Queue != nil {
		if counts, err := b.o.Queue.Counts(ctx); err == nil && counts["queued"] > 0 {
			fmt.Fprintf(&sb, "Notifications queued: %d\n", counts["queued"])
		}
		if until, err := b.o.Queue.QuietUntil(ctx); err == nil && until.After(b.o.Now()) {
			fmt.Fprintf(&sb, "Quiet until %s\n", until.In(b.o.Location).Format("Mon 15:04"))
		}
	}
	return sb.String()
}

// settingsText is the configuration the daemon was started with, and
// what the owner changed here since (/quiet).
func (b *Bot) settingsText(ctx context.Context) string {
	var sb strings.Builder
	if b.o.Settings != "" {
		sb.WriteString(b.o.Settings + "\n")
	}
	fmt.Fprintf(&sb, "Paired Telegram user: %d\n", b.Owner())
	if b.o.Drafter != nil {
		sb.WriteString("💬 Redraft: by the language model\n")
	} else {
		sb.WriteString("💬 Redraft: off (no language model configured)\n")
	}
	if b.o.Queue != nil {
		until, err := b.o.Queue.QuietUntil(ctx)
		switch {
		case err != nil:
			fmt.Fprintf(&sb, "/quiet: unknown (%v)\n", err)
		case until.After(b.o.Now()):
			fmt.Fprintf(&sb, "/quiet: on until %s (critical notifications still come; /quiet off ends it)\n", until.In(b.o.Location).Format("Mon 2 Jan 15:04"))
		default:
			sb.WriteString("/quiet: off (/quiet 2h holds notifications for two hours)\n")
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}

func (b *Bot) quiet(ctx context.Context, args string) {
	if b.o.Queue == nil {
		b.reply(ctx, "Notifications cannot be held in this setup.")
		return
	}
	var until time.Time
	switch args {
	case "off", "0":
	case "":
		until = b.o.Now().Add(time.Hour)
	default:
		d, err := time.ParseDuration(args)
		if err != nil || d <= 0 || d > 7*24*time.Hour {
			b.reply(ctx, "Say how long, like /quiet 90m or /quiet 3h (at most a week), or /quiet off.")
			return
		}
		until = b.o.Now().Add(d)
	}
	if err := b.o.Queue.SetQuiet(ctx, until); err != nil {
		b.reply(ctx, "Could not set quiet time: "+err.Error())
		return
	}
	if until.IsZero() {
		b.reply(ctx, "Quiet time is off; notifications come as they arrive.")
		return
	}
	b.reply(ctx, "Quiet until "+until.In(b.o.Location).Format("Mon 15:04")+". Critical notifications still come; the rest wait.")
}
