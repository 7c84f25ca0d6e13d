// Package triage decides what each new mail deserves — ignore, notify or
// respond — with a priority score built from explainable factors:
// heuristics first, a model only for the uncertain middle band, and a
// reply proposal (through the approval gate) when the owner should answer.
package triage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// HealthName is the component triage reports under.
const HealthName = "proactive"

// DefaultConsumer is triage's position in the item event log.
const DefaultConsumer = "proactive.triage"

// FactorImported marks the decision about recent mail from an archive
// import (store.EventImported): decided like new mail, announced to
// nobody, shown in the next briefing.
const FactorImported = "imported"

// Brain does triage's model work as background runs (jobs.Runner
// provides it): the reply to a mail that needs one, drafted with its
// context and proposed (its proposal id is returned), and the analysis of
// a GitHub item that waits for the owner (with the proposal id of a
// comment, if it proposed one). Its errors wrap router.ErrNoModel or
// router.ErrBudgetExceeded when no model could take the work.
type Brain interface {
	DraftReply(ctx context.Context, it *store.Item, why string, mentions []Mention) (string, error)
	AnalyseIssue(ctx context.Context, it *store.Item, why string) (note, proposal string, err error)
}

// Proposer turns a draft into a proposal awaiting the owner's approval.
type Proposer interface {
	Propose(ctx context.Context, d approval.Draft) (*approval.Proposal, error)
}

// Notifier tells the owner something.
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// Options are the triager's dependencies. Model, Brain, Proposer and
// Notifier may be nil: triage then works on heuristics alone, proposes a
// templated acknowledgement, proposes nothing, or tells nobody.
type Options struct {
	Store     *store.Store
	OwnerName string
	Owner     []string // the owner's configured addresses (the store adds learned ones)
	VIPs      []string // addresses or "@domain"
	Location  *time.Location
	Model     Model
	Brain     Brain
	Proposer  Proposer
	Notifier  Notifier
	Log       *slog.Logger
	Health    *health.Registry
	Now       func() time.Time
	Consumer  string // default DefaultConsumer
	Batch     int    // events per read (default 200)
	// Interval is how often Run looks for new events (default 30s), on
	// Clock (the wall clock when nil).
	Interval time.Duration
	Clock    schedule.Clock
	// StaleAfter is the age past which a mail is decided but not announced
	// (default 48h): a first sync's backfill of old mail is not news.
	StaleAfter time.Duration
}

// Triager consumes the item event log and triages mail.
type Triager struct {
	o    Options
	kick chan struct{} // Kick wakes Run before the interval is up

	// A pass stops at the first event that fails, so the failures in a
	// row are always those of the oldest pending event.
	mu       sync.Mutex
	failing  int64 // that event's id
	failures int

	// pass serialises passes: Run's, and an import's that waits for its
	// mail to be decided.
	pass sync.Mutex
}

// maxAttempts is how many passes in a row an event may fail before triage
// gives up on it, so that one item that cannot be decided does not hold
// back every mail after it. The item stays stored and searchable.
const maxAttempts = 5

// New returns a triager.
func New(o Options) (*Triager, error) {
	if o.Store == nil {
		return nil, errors.New("triage: a store is required")
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Consumer == "" {
		o.Consumer = DefaultConsumer
	}
	if o.Batch <= 0 {
		o.Batch = 200
	}
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = schedule.RealClock{}
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 48 * time.Hour
	}
	return &Triager{o: o, kick: make(chan struct{}, 1)}, nil
}

// Kick asks Run for a pass now: a collector stored new mail, and the owner
// should not wait out the interval to hear of it. It never blocks.
func (t *Triager) Kick() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Run triages new events every Interval, or at once after Kick, until ctx
// is done. A failed pass is reported in health and retried at the next
// interval: the events stay in the log until they are decided.
func (t *Triager) Run(ctx context.Context) error {
	for {
		if _, err := t.Pass(ctx); err != nil && ctx.Err() == nil {
			t.o.Log.Error("triage pass failed; retrying at the next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.kick:
		case <-t.o.Clock.After(t.o.Interval):
		}
	}
}

// Stats counts what one pass did.
type Stats struct {
	Events    int // events consumed
	Triaged   int // mails decided now
	Model     int // mails the model was asked about
	Tokens    int // tokens those calls used
	Proposals int // reply proposals made
	Notified  int // notifications queued
}

// Pass triages every pending event and returns what it did. An event is
// acknowledged only after its decision is stored and its proposal and
// notification are handed on, so a crash repeats the side effects at
// worst, never loses a mail; a repeat reuses the stored decision, so the
// model is not asked twice and the notification key deduplicates.
func (t *Triager) Pass(ctx context.Context) (Stats, error) {
	t.pass.Lock()
	defer t.pass.Unlock()
	var st Stats
	owner, err := t.ownerAddresses(ctx)
	if err != nil {
		return st, err
	}
	for {
		evs, err := t.o.Store.PendingEvents(ctx, t.o.Consumer, t.o.Batch)
		if err != nil {
			return st, fmt.Errorf("triage: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if err := t.handle(ctx, ev, owner, &st); err != nil {
				if ctx.Err() != nil || !t.giveUp(ev.ID) {
					t.fail(err)
					return st, err
				}
				t.o.Log.Error("triage gave up on an item after repeated failures; it stays stored and searchable but is not triaged",
					"item", ev.ItemID, "attempts", maxAttempts, "err", err)
				t.fail(fmt.Errorf("gave up on item %d after %d attempts: %w", ev.ItemID, maxAttempts, err))
				if t.o.Health != nil {
					t.o.Health.Add(HealthName, "gave_up", 1)
				}
				if err := t.ack(ctx, ev.ID); err != nil {
					return st, err
				}
			}
			st.Events++
		}
	}
	if t.o.Health != nil {
		t.o.Health.Success(HealthName)
		t.o.Health.Add(HealthName, "triaged", int64(st.Triaged))
		t.o.Health.Add(HealthName, "model_calls", int64(st.Model))
	}
	return st, nil
}

// giveUp counts a failed attempt at an event and reports whether it was
// the last one allowed.
func (t *Triager) giveUp(eventID int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if eventID != t.failing {
		t.failing, t.failures = eventID, 0
	}
	t.failures++
	return t.failures >= maxAttempts
}

func (t *Triager) fail(err error) {
	if t.o.Health != nil && !errors.Is(err, context.Canceled) {
		t.o.Health.Degrade(HealthName, err)
	}
}

func (t *Triager) ack(ctx context.Context, id int64) error {
	if err := t.o.Store.Tx(ctx, func(tx *store.Tx) error { return tx.AckEvents(t.o.Consumer, id) }); err != nil {
		return fmt.Errorf("triage: %w", err)
	}
	return nil
}

func (t *Triager) handle(ctx context.Context, ev store.ItemEvent, owner []string, st *Stats) error {
	it, err := t.o.Store.Item(ctx, ev.ItemID)
	if errors.Is(err, store.ErrNotFound) {
		return t.ack(ctx, ev.ID) // deleted since
	}
	if err != nil {
		return fmt.Errorf("triage: %w", err)
	}
	if it.Kind != "email" && it.Source != "github" {
		return t.ack(ctx, ev.ID)
	}
	tr, err := t.o.Store.TriageOf(ctx, it.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		var m Mail
		var res Result
		if it.Source == "github" {
			res = scoreGitHub(it)
		} else {
			m = MailFromItem(it)
			if res, err = t.score(ctx, m, owner, st); err != nil {
				return err
			}
		}
		tr = &store.Triage{ItemID: it.ID, Decision: string(res.Decision), Category: string(res.Category), Score: res.Score,
			Level: string(res.Level), Factors: res.Factors, Reason: res.Reason, ItemTime: it.Time}
		if res.Deadline != nil {
			tr.Deadline = res.Deadline.Time
		}
		for _, f := range res.Factors {
			if f.Name == "model" {
				tr.Model = "router"
			}
		}
		tr.Tokens = res.tokens
		switch age := t.o.Now().Sub(it.Time); {
		case ev.Kind == store.EventImported:
			tr.Factors = append(tr.Factors, store.Factor{Name: FactorImported, Detail: "imported from an archive: decided quietly, shown in the next briefing"})
		case age > t.o.StaleAfter:
			tr.Factors = append(tr.Factors, store.Factor{Name: "stale", Detail: fmt.Sprintf("received %s before it was triaged (a backfill): decided, not announced", roundDuration(age))})
		}
		if err := t.o.Store.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.SaveTriage(tr); err != nil {
				return err
			}
			return recordDecision(tx, it, tr)
		}); err != nil {
			return fmt.Errorf("triage: %w", err)
		}
		st.Triaged++
	case err != nil:
		return fmt.Errorf("triage: %w", err)
	case ev.Kind != "new":
		// A changed item (labels, a corrected body) keeps its decision:
		// re-scoring would re-ask the model and re-notify for nothing.
		return t.ack(ctx, ev.ID)
	}
	if err := t.act(ctx, it, tr, st); err != nil {
		return err
	}
	return t.ack(ctx, ev.ID)
}

// recordDecision starts the item's lifecycle with the decision: a mail is
// received and classified; a GitHub item waiting for the owner (a review
// requested, an assignment) is reported.
func recordDecision(tx *store.Tx, it *store.Item, tr *store.Triage) error {
	subject := graph.ItemSubject(it.ID)
	if it.Kind == "email" {
		if err := graph.AdvanceTx(tx, graph.Stage{Subject: subject, Chain: graph.Mail, Name: graph.Received, At: it.Time, Detail: it.Source}); err != nil {
			return err
		}
		return graph.AdvanceTx(tx, graph.Stage{Subject: subject, Chain: graph.Mail, Name: graph.Classified,
			Detail: fmt.Sprintf("%s (%s, priority %d)", tr.Decision, tr.Category, tr.Score)})
	}
	if waitsForOwner(it) {
		return graph.AdvanceTx(tx, graph.Stage{Subject: subject, Chain: graph.Issue, Name: graph.Reported, At: it.Time, Detail: metaString(it.Meta, "reason")})
	}
	return nil
}

// waitsForOwner reports a GitHub issue or pull request assigned to the
// owner or asking for their review (the item itself, not the
// notification that announced it).
func waitsForOwner(it *store.Item) bool {
	r := metaString(it.Meta, "reason")
	return it.Source == "github" && (it.Kind == "pr" || it.Kind == "issue") && (r == "review_requested" || r == "assign")
}

// score decides one mail: heuristics, then the model for the middle band.
func (t *Triager) score(ctx context.Context, m Mail, owner []string, st *Stats) (Result, error) {
	c, err := t.context(ctx, m, owner)
	if err != nil {
		return Result{}, err
	}
	res := Score(m, c)
	if !res.Uncertain || t.o.Model == nil {
		return res, nil
	}
	st.Model++
	v, resp, err := consult(ctx, t.o.Model, m, res)
	if resp != nil {
		res.tokens = resp.Usage.InputTokens + resp.Usage.OutputTokens
		st.Tokens += res.tokens
	}
	switch {
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case errors.Is(err, router.ErrBudgetExceeded):
		res.Factors = append(res.Factors, store.Factor{Name: "model_skipped", Detail: "the daily model budget is spent: heuristics decided"})
	case errors.Is(err, router.ErrNoModel):
		// nothing configured: the heuristic decision is the decision
	case err != nil:
		t.o.Log.Warn("triage model call failed; the heuristic decision stands", "item", m.ItemID, "err", err)
		res.Factors = append(res.Factors, store.Factor{Name: "model_failed", Detail: "model unavailable: heuristics decided (" + oneLine(err.Error(), 120) + ")"})
	default:
		applyVerdict(&res, m, v)
	}
	return res, nil
}

// context gathers what the store knows about the mail's sender and thread.
func (t *Triager) context(ctx context.Context, m Mail, owner []string) (Context, error) {
	c := Context{Owner: owner, Location: t.o.Location}
	contact, err := t.o.Store.Contact(ctx, m.From)
	switch {
	case err == nil:
		c.Contact = contact
		if contact.VIP {
			c.VIP, c.VIPReason = true, "marked VIP"
		}
	case !errors.Is(err, store.ErrNotFound):
		return c, fmt.Errorf("triage: %w", err)
	}
	if rule := MatchVIP(t.o.VIPs, m.From); rule != "" {
		c.VIP, c.VIPReason = true, "configured: "+rule
	}
	thread := m.Thread
	if thread == "" {
		thread = "item:" + m.ExternalID
	}
	th, err := t.o.Store.Thread(ctx, thread)
	switch {
	case err == nil:
		c.Thread = th
	case !errors.Is(err, store.ErrNotFound):
		return c, fmt.Errorf("triage: %w", err)
	}
	keys := []string{"sender:" + m.From}
	if d := domainOf(m.From); d != "" {
		keys = append(keys, "domain:"+d)
	}
	prefs, err := t.o.Store.PreferencesFor(ctx, keys...)
	if err != nil {
		return c, fmt.Errorf("triage: %w", err)
	}
	for _, k := range keys {
		if p, ok := prefs[k]; ok {
			c.Preferences = append(c.Preferences, p)
		}
	}
	return c, nil
}

// act hands a decision on: a reply proposal for respond, a notification
// for anything above silent; a stale mail (a backfill) and imported mail
// get neither. Each happens once per item: the proposal id
// is stored with the decision, and the notification key is stable.
func (t *Triager) act(ctx context.Context, it *store.Item, tr *store.Triage, st *Stats) error {
	if slices.ContainsFunc(tr.Factors, func(f store.Factor) bool { return f.Name == "stale" || f.Name == FactorImported }) {
		return nil
	}
	if it.Kind == "email" && tr.Decision != string(Respond) {
		if err := graph.NewChains(t.o.Store).Advance(ctx, graph.Stage{Subject: graph.ItemSubject(it.ID), Chain: graph.Mail, Name: graph.NoReplyNeeded, Detail: "triage: " + tr.Decision}); err != nil && !errors.Is(err, graph.ErrOutOfOrder) {
			return fmt.Errorf("triage: %w", err)
		}
	}
	var analysis string
	if t.o.Brain != nil && waitsForOwner(it) {
		note, _, err := t.o.Brain.AnalyseIssue(ctx, it, tr.Reason)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			t.o.Log.Warn("no analysis of the GitHub item", "item", it.ID, "err", err)
		default:
			analysis = note
		}
	}
	if tr.Decision == string(Respond) && tr.ProposalID == "" && t.o.Proposer != nil && it.Kind == "email" {
		answered, err := t.answeredSince(ctx, it)
		if err != nil {
			return err
		}
		if answered {
			// The owner wrote in the thread after this mail (it arrived in
			// the same pass): a draft now would only replace theirs.
			return nil
		}
		id, err := t.proposeReply(ctx, it, tr)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			// The decision stands and is notified; only the draft is missing.
			t.o.Log.Error("could not propose a reply", "item", it.ID, "err", err)
			t.fail(fmt.Errorf("propose reply to item %d: %w", it.ID, err))
		default:
			tr.ProposalID = id
			st.Proposals++
		}
	}
	if tr.Level == string(notify.Silent) || t.o.Notifier == nil {
		return nil
	}
	if tr.ProposalID != "" && tr.Level != string(notify.Critical) {
		return nil // the proposal's own message tells the owner, with its buttons
	}
	msg := notify.Message{
		Level:  notify.Level(tr.Level),
		Key:    fmt.Sprintf("triage:%s:%s:%s", it.Source, it.ExternalID, tr.Decision),
		Text:   notificationText(it, tr, t.o.Location),
		ItemID: it.ID,
	}
	if analysis != "" {
		msg.Text += "\n\nAnalysis: " + analysis
	}
	if err := t.o.Notifier.Notify(ctx, msg); err != nil {
		return fmt.Errorf("triage: notify: %w", err)
	}
	st.Notified++
	return nil
}

// answeredSince reports whether the owner has written in the mail's
// thread after it.
func (t *Triager) answeredSince(ctx context.Context, it *store.Item) (bool, error) {
	if it.Thread == "" {
		return false, nil
	}
	th, err := t.o.Store.Thread(ctx, it.Thread)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("triage: %w", err)
	}
	return th.LastOutbound.After(it.Time), nil
}

func (t *Triager) proposeReply(ctx context.Context, it *store.Item, tr *store.Triage) (string, error) {
	m := MailFromItem(it)
	var dl *Deadline
	if !tr.Deadline.IsZero() {
		dl = &Deadline{Time: tr.Deadline}
	}
	why := "no model draft"
	if t.o.Brain != nil {
		id, err := t.o.Brain.DraftReply(ctx, it, tr.Reason, MentionedTimes(m.Subject+"\n"+m.Body, it.Time, t.o.Location))
		switch {
		case err == nil:
			if err := t.o.Store.SetTriageProposal(ctx, it.ID, id); err != nil {
				return "", err
			}
			return id, nil
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		why = "no model draft: " + withoutModel(err)
		t.o.Log.Warn("the drafting run did not propose a reply; proposing a templated acknowledgement", "item", it.ID, "err", err)
	}
	body := TemplateReply(m, t.o.OwnerName, dl, t.o.Location)
	reason := "Templated acknowledgement (" + why + "): " + tr.Reason
	name := m.FromName
	if name == "" {
		name = m.From
	}
	payload := ReplyPayload(m, body)
	p, err := t.o.Proposer.Propose(ctx, approval.Draft{
		Kind: approval.KindReply, Title: fmt.Sprintf("Reply to %s: %s", name, payload.Subject), Reason: reason,
		Origin: "proactive", Payload: payload, ItemID: it.ID, Thread: it.Thread,
	})
	if err != nil {
		return "", err
	}
	if err := t.o.Store.SetTriageProposal(ctx, it.ID, p.ID); err != nil {
		return "", err
	}
	return p.ID, nil
}

// withoutModel says in a few words why the model's work was not done.
func withoutModel(err error) string {
	switch {
	case errors.Is(err, router.ErrBudgetExceeded):
		return "today's model budget is spent"
	case errors.Is(err, router.ErrNoModel):
		return "no model can take it"
	}
	return "the model's run failed (" + oneLine(err.Error(), 100) + ")"
}

// notificationText is what the owner reads: who, what, why.
func notificationText(it *store.Item, tr *store.Triage, loc *time.Location) string {
	var b strings.Builder
	switch tr.Decision {
	case string(Respond):
		b.WriteString("Needs your answer: ")
	default:
		b.WriteString("New: ")
	}
	from := metaString(it.Meta, "from_name")
	if from == "" {
		from = it.Sender
	}
	if from != "" {
		fmt.Fprintf(&b, "%s — ", from)
	}
	title := it.Title
	if title == "" {
		title = "(no subject)"
	}
	b.WriteString(title)
	if !tr.Deadline.IsZero() {
		fmt.Fprintf(&b, "\nDeadline: %s", tr.Deadline.In(loc).Format("Mon Jan 2 15:04"))
	}
	fmt.Fprintf(&b, "\nWhy: %s\n(omnibrain explain %s)", tr.Reason, it.ExternalID)
	return b.String()
}

// ownerAddresses are the configured addresses plus those the store learned.
func (t *Triager) ownerAddresses(ctx context.Context) ([]string, error) {
	learned, err := t.o.Store.OwnerAddresses(ctx)
	if err != nil {
		return nil, fmt.Errorf("triage: %w", err)
	}
	out := lowerAll(t.o.Owner)
	for _, a := range learned {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// MatchVIP returns the VIP rule (an address or "@domain") addr matches, or "".
func MatchVIP(vips []string, addr string) string {
	addr = strings.ToLower(strings.TrimSpace(addr))
	for _, v := range vips {
		v = strings.ToLower(strings.TrimSpace(v))
		switch {
		case v == "":
		case strings.HasPrefix(v, "@") && strings.HasSuffix(addr, v):
			return v
		case v == addr:
			return v
		}
	}
	return ""
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// scoreGitHub decides GitHub items by their reason: what waits for the
// owner (a review, an assignment, a mention, a failing check on their own
// pull request) is worth knowing; the rest is recorded.
func scoreGitHub(it *store.Item) Result {
	r := Result{Category: Automated}
	reason := metaString(it.Meta, "reason")
	checks := metaString(it.Meta, "checks")
	score := baseScore
	r.add("base", baseScore, "starting point")
	switch reason {
	case "review_requested":
		score += 25
		r.add("github_review", 25, "your review is requested")
	case "assign":
		score += 20
		r.add("github_assigned", 20, "assigned to you")
	case "mention", "team_mention":
		score += 15
		r.add("github_mention", 15, "you were mentioned")
	case "author":
		if checks == "failure" {
			score += 35
			r.add("github_checks", 35, "checks fail on your pull request")
		}
	default:
		score -= 10
		r.add("github_other", -10, "reason %s", reason)
	}
	r.Score = max(0, min(100, score))
	switch {
	case r.Score >= notifyAt:
		r.Decision = Notify
	default:
		r.Decision = Ignore
	}
	r.Level = levelFor(r.Decision, r.Score)
	r.Reason = r.summary(Mail{})
	return r
}
