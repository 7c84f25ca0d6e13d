package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/drafting"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/proactive"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/store"
	"github.com/omnibrain/omnibrain/telegram"
)

// telegramFix is what the owner does to enable the bot.
const telegramFix = "set OMNIBRAIN_TELEGRAM_TOKEN (a bot token from @BotFather), restart, then run: omnibrain telegram pair"

// pairingTTL is how long a pairing code works.
const pairingTTL = 10 * time.Minute

// openTelegram serves pairing and, with a token, supervises the bot and
// the delivery of the notification queue through it. It uses the
// backends' search and chat for the owner's free text, so call it after
// they are set.
func (a *App) openTelegram(ctx context.Context, b *api.Backends) error {
	b.Telegram = telegramPairing{a: a}
	if !a.cfg.Telegram.Token.IsSet() {
		a.health.Set(telegram.HealthName, health.Disabled, telegramFix)
		return nil
	}
	opts := telegram.Options{
		Token: a.cfg.Telegram.Token.Reveal(), APIURL: a.cfg.Telegram.APIURL, OwnerID: a.cfg.Telegram.OwnerID,
		DB: a.store.DB(), Gate: a.approval.gate, Queue: a.approval.queue, Health: a.health,
		Log: a.log.With("component", "telegram"), Now: a.store.Now, Location: a.cfg.Location,
		Settings: a.telegramSettings(),
	}
	if b.Search != nil {
		opts.Search = b.Search
	}
	if b.Chat != nil {
		opts.Chat = chatReplies{chat: b.Chat}
	}
	if a.llm != nil && a.llm.Available() {
		opts.Drafter = drafting.Drafter{Model: a.llm, OwnerName: a.cfg.Owner.Name}
	}
	if a.proactive.engine != nil {
		opts.Briefer = briefingReplies{e: a.proactive.engine, st: a.store}
	}
	if a.memory != nil {
		opts.Memory = a.memory
	}
	bot, err := telegram.New(ctx, opts)
	if err != nil {
		return err
	}
	disp, err := notify.NewDispatcher(notify.DispatcherOptions{
		Queue: a.approval.queue, Store: a.store, Sender: bot, Policy: a.approval.policy,
		Log: a.log.With("component", "notify"), Now: a.store.Now, Health: a.health, HealthName: telegram.HealthName,
	})
	if err != nil {
		return err
	}
	a.components = append(a.components,
		supervise.Component{Name: telegram.HealthName, Run: bot.Run},
		supervise.Component{Name: "notify", Run: disp.Run},
	)
	return nil
}

func (a *App) telegramSettings() string {
	c := a.cfg
	owner := "paired with /start CODE (omnibrain telegram pair)"
	if c.Telegram.OwnerID != 0 {
		owner = fmt.Sprintf("user %d (OMNIBRAIN_TELEGRAM_OWNER_ID)", c.Telegram.OwnerID)
	}
	quiet := "off"
	if c.Notifications.QuietStart != "" {
		quiet = c.Notifications.QuietStart + "–" + c.Notifications.QuietEnd
	}
	return fmt.Sprintf("Owner: %s\nTimezone: %s\nProposals expire after %s; snooze lasts %s\nQuiet hours: %s; at most %d non-critical notifications a day\nHome: %s",
		owner, c.TimezoneName(), c.Approval.Expiry, c.Approval.Snooze, quiet, c.Notifications.DailyBudget, c.Home)
}

// chatReplies gives the bot the agent's chat answers as text with their sources.
type chatReplies struct{ chat api.Chatter }

func (c chatReplies) Reply(ctx context.Context, session, text string) (string, error) {
	return c.ReplyWithStatus(ctx, session, text, nil)
}

// ReplyWithStatus passes on what running tools say they are doing (a
// plugin's status message), for the bot to show while the owner waits.
func (c chatReplies) ReplyWithStatus(ctx context.Context, session, text string, status func(string)) (string, error) {
	var onEvent func(agent.Event)
	if status != nil {
		onEvent = func(ev agent.Event) {
			if ev.Type == agent.EventToolStatus {
				status(ev.Text)
			}
		}
	}
	ans, err := c.chat.Chat(ctx, session, text, onEvent)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(ans.Text)
	if len(ans.Citations) > 0 {
		b.WriteString("\n\nSources:")
		for _, ci := range ans.Citations {
			fmt.Fprintf(&b, "\n[%d] %s · %s · %s", ci.N, ci.Title, ci.Source, ci.Time.Format("2 Jan 2006"))
		}
	}
	return b.String(), nil
}

// briefingReplies answers /briefing with the same briefing the schedule
// sends. A briefing made by the request is also queued as a notification;
// the reply takes its place, so the owner does not get it twice.
type briefingReplies struct {
	e  *proactive.Engine
	st *store.Store
}

func (b briefingReplies) Briefing(ctx context.Context, kind string) (string, error) {
	br, created, err := b.e.Briefing(ctx, kind, schedule.Run{Job: kind, Manual: true})
	if err != nil {
		return "", err
	}
	text := br.Text
	if br.Narrative != "" {
		text = br.Narrative + "\n\n" + br.Text
	}
	if !created {
		return text, nil
	}
	n, err := b.st.NotificationByKey(ctx, proactive.BriefingKeyPrefix+kind+":"+br.Day)
	if err != nil {
		return text, nil // not queued (no notifier): the reply is the only copy
	}
	err = b.st.UpdateNotification(ctx, n.ID, store.NotificationUpdate{State: store.NotificationDelivered, Error: "answered /briefing in the chat"})
	if errors.Is(err, store.ErrNotFound) {
		return "", nil // the queue was quicker: the owner has it already
	}
	return text, err
}

// telegramPairing makes pairing codes for `omnibrain telegram pair`.
type telegramPairing struct{ a *App }

func (t telegramPairing) Pair(ctx context.Context) (*api.PairResponse, error) {
	cfg := t.a.cfg
	if cfg.Telegram.OwnerID != 0 {
		return nil, api.BadRequest("the owner is Telegram user %d by configuration (OMNIBRAIN_TELEGRAM_OWNER_ID): pairing is not needed", cfg.Telegram.OwnerID)
	}
	code, expires, err := telegram.NewPairingCode(ctx, t.a.store.DB(), t.a.store.Now(), pairingTTL)
	if err != nil {
		return nil, err
	}
	res := &api.PairResponse{Code: code, Expires: expires}
	if !cfg.Telegram.Token.IsSet() {
		res.Note = "no bot token is configured yet: " + telegramFix
	}
	return res, nil
}
