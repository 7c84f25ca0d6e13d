// Package telegram is omnibrain's Telegram bot (go-telegram/bot): it
// pairs with the owner, shows proposals with their whole payload and the
// approval buttons, turns presses into decisions at the approval gate,
// delivers the notification queue, and passes the owner's free text to
// the chat. Nothing is ever sent to anyone but the owner.
package telegram

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/passes"
	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/internal/wait"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/search"
)

// HealthName is the bot's component in the health registry.
const HealthName = "telegram"

// Chat answers the owner's free text (the agent's chat).
type Chat interface {
	Reply(ctx context.Context, session, text string) (string, error)
}

// StatusChat is a Chat that says what it is doing while it answers (a
// plugin tool's status message); the bot shows each as a message.
type StatusChat interface {
	ReplyWithStatus(ctx context.Context, session, text string, status func(string)) (string, error)
}

// ChatFunc adapts a function to Chat.
type ChatFunc func(ctx context.Context, session, text string) (string, error)

// Reply implements Chat.
func (f ChatFunc) Reply(ctx context.Context, session, text string) (string, error) {
	return f(ctx, session, text)
}

// Drafter rewrites a proposal's payload following the owner's
// instructions (💬 Redraft). The result is proposed anew and needs its
// own approval.
type Drafter interface {
	Redraft(ctx context.Context, p *approval.Proposal, instructions string) (payload any, err error)
}

// Searcher searches the owner's memory: the answer to free text while no
// chat is wired, and /search.
type Searcher interface {
	Search(ctx context.Context, q search.Query) ([]search.Hit, error)
}

// Briefer writes a briefing on demand (/briefing): its text, or "" when
// the briefing already reached the owner as a notification.
type Briefer interface {
	Briefing(ctx context.Context, kind string) (string, error)
}

// Gate is the approval gate as the bot uses it: it shows proposals,
// hears of their changes, and turns the owner's presses and texts into
// decisions and edits (*approval.Gate).
type Gate interface {
	Get(ctx context.Context, id string) (*approval.Proposal, error)
	List(ctx context.Context, o approval.ListOptions) ([]*approval.Proposal, error)
	Subscribe(fn func(*approval.Proposal))
	Approve(ctx context.Context, id, hash string, by approval.Owner) (*approval.Proposal, error)
	Reject(ctx context.Context, id string, by approval.Owner) (*approval.Proposal, error)
	Snooze(ctx context.Context, id string, by approval.Owner) (*approval.Proposal, error)
	Undo(ctx context.Context, id string, by approval.Owner) (*approval.Proposal, error)
	EditBody(ctx context.Context, id, body string, by approval.Owner) (*approval.Proposal, error)
	Revise(ctx context.Context, id string, payload any, origin string, by approval.Owner) (*approval.Proposal, error)
}

// Queue is the notification queue as /status, /quiet and pairing use it
// (*notify.Queue).
type Queue interface {
	Wake()
	Counts(ctx context.Context) (map[string]int64, error)
	QuietUntil(ctx context.Context) (time.Time, error)
	SetQuiet(ctx context.Context, until time.Time) error
}

// Options are the bot's dependencies. Token, DB and Gate are required.
type Options struct {
	Token   string
	APIURL  string // bare root: requests go to {APIURL}/bot{token}/{method}
	OwnerID int64  // configured owner; 0: the user paired with /start CODE
	// DB is the omnibrain database, where the bot keeps its own state
	// (pairing, the last update, which messages show which proposal).
	DB      *sql.DB
	Gate    Gate
	Queue   Queue    // /quiet and /status; optional
	Chat    Chat     // optional: without it free text gets search results
	Drafter Drafter  // optional: without it Redraft says it needs a model
	Search  Searcher // optional
	Briefer Briefer  // optional
	Memory  Memory   // optional: /memory, and ✅ Keep / ❌ Drop on suggested facts (memory.go)
	Health  *health.Registry
	Log     *slog.Logger
	Now     func() time.Time
	// Location shows times in the owner's zone.
	Location *time.Location
	// Settings is the text /settings shows.
	Settings string
	// HTTPClient talks to Telegram; its timeout must exceed PollTimeout.
	HTTPClient *http.Client
	// PollTimeout is the long-poll wait of getUpdates (default 50s).
	PollTimeout time.Duration
}

// Bot is the running bot.
type Bot struct {
	o     Options
	tg    *tgbot.Bot
	log   *slog.Logger
	state state

	owner atomic.Int64
	// The last update processed, and when: only touched by the update
	// handler (one at a time).
	lastUpdate   int64
	lastUpdateAt time.Time

	jobs chan func(context.Context) // slow work (chat, redraft), off the update loop

	refreshMu  sync.Mutex
	refreshIDs map[string]bool
	refreshSig chan struct{}
	refreshes  passes.Tracker // the refresher's passes, for tests

	partsMu   sync.Mutex
	partsSent map[int64]int // notification id -> parts already sent (a retry resumes)
}

// New builds the bot; it does not contact Telegram until Run.
func New(ctx context.Context, o Options) (*Bot, error) {
	if o.Token == "" || o.DB == nil || o.Gate == nil {
		return nil, errors.New("telegram: token, database and gate are required")
	}
	if o.APIURL == "" {
		o.APIURL = "https://api.telegram.org"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Health == nil {
		o.Health = health.NewRegistry(o.Now)
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 50 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.PollTimeout + 15*time.Second}
	}
	b := &Bot{o: o, log: o.Log, state: state{db: o.DB, now: o.Now}, jobs: make(chan func(context.Context), 16),
		refreshIDs: map[string]bool{}, refreshSig: make(chan struct{}, 1), partsSent: map[int64]int{}}
	owner := o.OwnerID
	if owner == 0 {
		paired, err := b.state.owner(ctx)
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		owner = paired
	}
	b.owner.Store(owner)
	last, lastAt, err := b.state.lastUpdate(ctx)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	b.lastUpdate, b.lastUpdateAt = last, lastAt
	if !b.mayRedeliver(o.Now()) {
		last = 0 // ids may have been reseeded: confirm nothing by number
	}
	tg, err := tgbot.New(o.Token,
		tgbot.WithServerURL(strings.TrimSuffix(o.APIURL, "/")),
		tgbot.WithSkipGetMe(),
		tgbot.WithHTTPClient(o.PollTimeout, &observer{c: o.HTTPClient, b: b}),
		tgbot.WithDefaultHandler(b.onUpdate),
		tgbot.WithNotAsyncHandlers(),
		tgbot.WithInitialOffset(last),
		tgbot.WithAllowedUpdates(tgbot.AllowedUpdates{models.AllowedUpdateMessage, models.AllowedUpdateCallbackQuery}),
		tgbot.WithErrorsHandler(func(err error) { b.log.Warn("telegram: polling failed", "err", err) }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	b.tg = tg
	o.Gate.Subscribe(b.proposalChanged)
	return b, nil
}

// Owner is the owner's user id (0 while not paired).
func (b *Bot) Owner() int64 { return b.owner.Load() }

// observer reports the reachability of Telegram to the health registry.
type observer struct {
	c *http.Client
	b *Bot
}

func (o *observer) Do(r *http.Request) (*http.Response, error) {
	resp, err := o.c.Do(r)
	switch {
	case err != nil && r.Context().Err() == nil:
		o.b.o.Health.Degrade(HealthName, fmt.Errorf("Telegram unreachable: %w", redactToken(err, o.b.o.Token)))
	case err == nil && resp.StatusCode < 500:
		o.b.reportHealthy()
	}
	return resp, err
}

func redactToken(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[redacted]"))
}

func (b *Bot) reportHealthy() {
	if b.Owner() == 0 {
		b.o.Health.Set(HealthName, health.Degraded, "not paired: run `omnibrain telegram pair` and send /start CODE to the bot")
		return
	}
	b.o.Health.Success(HealthName)
}

// commands are registered with setMyCommands.
var commands = []models.BotCommand{
	{Command: "start", Description: "pair with omnibrain (/start CODE)"},
	{Command: "help", Description: "what I can do"},
	{Command: "briefing", Description: "a briefing now (morning, evening, weekly)"},
	{Command: "proposals", Description: "proposals waiting for you"},
	{Command: "search", Description: "search your mail, calendar and GitHub"},
	{Command: "memory", Description: "what I remember about you"},
	{Command: "status", Description: "how omnibrain is doing"},
	{Command: "settings", Description: "what is configured"},
	{Command: "quiet", Description: "hold notifications (/quiet 2h, /quiet off)"},
}

// Run checks the token, registers the commands and serves updates until
// ctx is done. The chat worker and the message refresher run beside it.
func (b *Bot) Run(ctx context.Context) error {
	if err := b.hello(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); b.worker(ctx) }()
	go func() { defer wg.Done(); b.refresher(ctx) }()
	b.tg.Start(ctx)
	wg.Wait()
	return nil
}

// hello calls getMe (is the token good?) and setMyCommands, waiting with
// backoff while Telegram is unreachable.
func (b *Bot) hello(ctx context.Context) error {
	unreachable := retry.Policy{Initial: time.Second, Max: time.Minute}.Backoff()
	for {
		_, err := b.tg.GetMe(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil // stopped before Telegram answered: no failure
		}
		if errors.Is(err, tgbot.ErrorUnauthorized) || errors.Is(err, tgbot.ErrorNotFound) {
			err = fmt.Errorf("telegram: the bot token was refused (%w): check OMNIBRAIN_TELEGRAM_TOKEN", redactToken(err, b.o.Token))
			b.o.Health.Failure(HealthName, err)
			return err
		}
		b.o.Health.Degrade(HealthName, redactToken(err, b.o.Token))
		if wait.Sleep(ctx, unreachable.NextBackOff()) != nil {
			return nil
		}
	}
	if _, err := b.call(ctx, func(ctx context.Context) (any, error) {
		return b.tg.SetMyCommands(ctx, &tgbot.SetMyCommandsParams{Commands: commands})
	}); err != nil && ctx.Err() == nil {
		b.log.Warn("telegram: could not register the commands", "err", err)
	}
	b.reportHealthy()
	return nil
}

// call runs one Bot API request, waiting out 429s (retry_after, at most
// three times).
func (b *Bot) call(ctx context.Context, fn func(context.Context) (any, error)) (any, error) {
	for i := 0; ; i++ {
		res, err := fn(ctx)
		var tm *tgbot.TooManyRequestsError
		if err == nil || !errors.As(err, &tm) || i == 3 {
			return res, err
		}
		wait := time.Duration(max(tm.RetryAfter, 1)) * time.Second
		b.log.Info("telegram: rate limited; waiting", "retry_after", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// send sends HTML text to the owner, split into parts of at most 4,096
// characters; the buttons (if any) go on the last part. It returns the
// ids of the messages sent. Nothing can be sent to anyone else: the chat
// is always the owner's.
func (b *Bot) send(ctx context.Context, html string, kb [][]button, quiet bool) ([]int, error) {
	owner := b.Owner()
	if owner == 0 {
		return nil, errNotPaired
	}
	limit := MaxMessage
	if kb != nil {
		limit = MaxMessage - outcomeRoom
	}
	parts := splitHTML(html, limit)
	var ids []int
	for i, part := range parts {
		id, err := b.sendPart(ctx, owner, part, kbIf(i == len(parts)-1, kb), quiet)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func kbIf(ok bool, kb [][]button) [][]button {
	if ok {
		return kb
	}
	return nil
}

var errNotPaired = errors.New("telegram: no owner paired yet (run `omnibrain telegram pair`)")

func (b *Bot) sendPart(ctx context.Context, chatID int64, part string, kb [][]button, quiet bool) (int, error) {
	params := &tgbot.SendMessageParams{ChatID: chatID, Text: part, ParseMode: models.ParseModeHTML,
		DisableNotification: quiet, LinkPreviewOptions: noPreview()}
	if kb != nil {
		params.ReplyMarkup = markup(kb)
	}
	res, err := b.call(ctx, func(ctx context.Context) (any, error) { return b.tg.SendMessage(ctx, params) })
	if err != nil {
		return 0, err
	}
	return res.(*models.Message).ID, nil
}

// noPreview turns link previews off: a link in a mail must not make
// Telegram fetch it, on a send or an edit.
func noPreview() *models.LinkPreviewOptions {
	return &models.LinkPreviewOptions{IsDisabled: tgbot.True()}
}

func markup(kb [][]button) *models.InlineKeyboardMarkup {
	m := &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	for _, row := range kb {
		var r []models.InlineKeyboardButton
		for _, bt := range row {
			r = append(r, models.InlineKeyboardButton{Text: bt.text, CallbackData: bt.data})
		}
		m.InlineKeyboard = append(m.InlineKeyboard, r)
	}
	return m
}

// reply sends plain text to the owner (escaped), logging failures: it is
// the answer to something the owner just did.
func (b *Bot) reply(ctx context.Context, text string) {
	b.replyHTML(ctx, esc(text))
}

func (b *Bot) replyHTML(ctx context.Context, html string) {
	if _, err := b.send(ctx, html, nil, false); err != nil && ctx.Err() == nil {
		b.log.Warn("telegram: could not answer the owner", "err", err)
	}
}

// answer answers a callback query; Telegram shows text briefly.
func (b *Bot) answer(ctx context.Context, queryID, text string) {
	_, err := b.call(ctx, func(ctx context.Context) (any, error) {
		return b.tg.AnswerCallbackQuery(ctx, &tgbot.AnswerCallbackQueryParams{CallbackQueryID: queryID, Text: text})
	})
	if err != nil && ctx.Err() == nil {
		b.log.Warn("telegram: could not answer a button press", "err", err)
	}
}

// Send delivers one queued notification (notify.Sender). A proposal is
// shown whole with its buttons while it is undecided; one decided
// meanwhile (from the CLI, say) is not shown again.
func (b *Bot) Send(ctx context.Context, m notify.Queued) (err error) {
	defer func() {
		// A bug showing one notification must not stop the dispatcher
		// (and the daemon): the notification stays queued and is retried.
		if p := recover(); p != nil {
			b.recovered("send", p)
			err = fmt.Errorf("telegram: showing notification %d failed: %v", m.ID, p)
		}
	}()
	if b.Owner() == 0 {
		return &notify.RetryAfterError{After: time.Minute, Err: errNotPaired}
	}
	var html string
	var kb [][]button
	var p *approval.Proposal
	if m.ProposalID != "" {
		var err error
		p, err = b.o.Gate.Get(ctx, m.ProposalID)
		if errors.Is(err, approval.ErrNotFound) {
			return &notify.PermanentError{Err: err}
		}
		if err != nil {
			return err
		}
		if p.State != approval.StatePending {
			return nil
		}
		html, kb = renderProposal(p, b.o.Location), buttons(p)
	} else {
		html = esc(m.Text)
		if m.Level == notify.Critical {
			html = "🚨 " + html
		}
		if id, ok := suggestionID(m.Key); ok && b.o.Memory != nil {
			kb = suggestionButtons(id)
		}
	}
	ids, err := b.sendResuming(ctx, m.ID, html, kb, m.Level == notify.FYI || m.Level == notify.Silent)
	if err != nil {
		return classify(err)
	}
	if p != nil {
		b.recordMessage(ctx, p, ids)
	}
	return nil
}

func shown(p *approval.Proposal, chatID int64, msgID int) shownMessage {
	return shownMessage{ProposalID: p.ID, ChatID: chatID, MessageID: int64(msgID), PayloadHash: p.PayloadHash}
}

// sendResuming sends a notification's parts, skipping those a failed
// earlier attempt already delivered, so a retry does not repeat them.
func (b *Bot) sendResuming(ctx context.Context, notificationID int64, html string, kb [][]button, quiet bool) ([]int, error) {
	owner := b.Owner()
	limit := MaxMessage
	if kb != nil {
		limit = MaxMessage - outcomeRoom
	}
	parts := splitHTML(html, limit)
	b.partsMu.Lock()
	done := b.partsSent[notificationID]
	b.partsMu.Unlock()
	var ids []int
	for i := done; i < len(parts); i++ {
		id, err := b.sendPart(ctx, owner, parts[i], kbIf(i == len(parts)-1, kb), quiet)
		if err != nil {
			b.partsMu.Lock()
			b.partsSent[notificationID] = i
			b.partsMu.Unlock()
			return ids, err
		}
		ids = append(ids, id)
	}
	b.partsMu.Lock()
	delete(b.partsSent, notificationID)
	b.partsMu.Unlock()
	return ids, nil
}

// classify turns a Bot API error into what the notification queue needs:
// wait (rate limit, the owner has not opened the chat), give up on this
// message (Telegram refuses it) or retry later (unreachable).
func classify(err error) error {
	var tm *tgbot.TooManyRequestsError
	switch {
	case errors.As(err, &tm):
		return &notify.RetryAfterError{After: time.Duration(max(tm.RetryAfter, 1)) * time.Second, Err: err, RateLimit: true}
	case errors.Is(err, tgbot.ErrorForbidden), errors.Is(err, tgbot.ErrorUnauthorized),
		errors.Is(err, tgbot.ErrorBadRequest) && strings.Contains(err.Error(), "chat not found"):
		// The owner blocked the bot or never opened the chat, or the token
		// was revoked: keep everything until that is fixed.
		return &notify.RetryAfterError{After: time.Minute, Err: err}
	case errors.Is(err, tgbot.ErrorBadRequest):
		return &notify.PermanentError{Err: err}
	}
	return err
}
