package approval

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/internal/passes"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// Owner is the only actor that can decide a proposal. It is made by the
// owner's own channels — the Telegram bot for the paired user, the local
// API for a socket or token holder — and by nothing a model can reach: the
// agent and the proactive engine only ever get Propose.
type Owner struct{ name string }

// TelegramOwner is the paired Telegram user (the bot checks the id first).
func TelegramOwner(userID int64) Owner { return Owner{name: fmt.Sprintf("telegram:%d", userID)} }

// APIOwner is whoever holds the local API socket or token.
func APIOwner() Owner { return Owner{name: "api"} }

func (o Owner) String() string { return o.name }

// ownerActor reports whether an audit row's actor is the owner.
func ownerActor(actor string) bool { return actor == "api" || strings.HasPrefix(actor, "telegram:") }

// Actors recorded in the audit log besides the owner.
const (
	actorSystem = "system" // expiry, snooze wake-up, outbox
	actorGmail  = "gmail"  // the owner answered the thread in Gmail
)

// Errors the decisions return.
var (
	ErrNotFound     = errors.New("no such proposal")
	ErrNotOwner     = errors.New("only the owner can decide a proposal")
	ErrHashMismatch = errors.New("the payload hash does not match the proposal: approve what you were shown")
	// ErrStale is wrapped by StaleError: the proposal is not in a state
	// the decision applies to, so nothing changed.
	ErrStale = errors.New("nothing changed")
)

// StaleError is a decision that came too late or twice: it carries the
// proposal as it is now.
type StaleError struct{ Proposal *Proposal }

func (e *StaleError) Error() string {
	p := e.Proposal
	if p.State == StateSuperseded && p.SupersededBy != "" {
		return fmt.Sprintf("proposal %s is superseded by %s: nothing changed", p.ID, p.SupersededBy)
	}
	return fmt.Sprintf("proposal %s is %s: nothing changed", p.ID, p.State)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// Executors finds the executor for a kind.
type Executors interface {
	Executor(kind Kind) (Executor, bool)
}

// Notifier tells the owner something.
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// GateOptions are the gate's dependencies.
type GateOptions struct {
	Store     *store.Store
	Executors Executors // may be nil: approved proposals then fail with a reason
	Notifier  Notifier  // may be nil in tests
	Expiry    time.Duration
	Snooze    time.Duration
	Log       *slog.Logger
	Now       func() time.Time
	// SendDelay is how long an approved proposal waits before it is
	// executed (approval.send_delay); the owner can undo the approval
	// until then. 0: at once.
	SendDelay time.Duration
	// OutboxInterval is how often the outbox looks for approved
	// proposals besides being woken by approvals (default 30s).
	OutboxInterval time.Duration
	// ExecuteTimeout bounds one execution or lookup (default 2 minutes).
	ExecuteTimeout time.Duration
	// FindSettle is how long after an interrupted attempt began the remote
	// side's "not found" is believed (default 2 minutes): Gmail can take a
	// moment to make a mail it accepted searchable, and believing its
	// absence too early would send the mail twice.
	FindSettle time.Duration
}

// Gate holds proposals and decides their fate. It is safe for concurrent use.
type Gate struct {
	st       *store.Store
	execs    Executors
	notifier Notifier
	expiry   time.Duration
	snooze   time.Duration
	delay    time.Duration
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
	timeout  time.Duration
	settle   time.Duration

	kick   chan struct{}
	passes passes.Tracker // the outbox's passes, for WaitPass

	mu        sync.Mutex
	listeners []func(*Proposal)
}

// NewGate returns a gate over the store.
func NewGate(opts GateOptions) (*Gate, error) {
	if opts.Store == nil {
		return nil, errors.New("approval: a store is required")
	}
	if opts.Expiry <= 0 {
		opts.Expiry = 24 * time.Hour
	}
	if opts.Snooze <= 0 {
		opts.Snooze = 2 * time.Hour
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.OutboxInterval <= 0 {
		opts.OutboxInterval = 30 * time.Second
	}
	if opts.ExecuteTimeout <= 0 {
		opts.ExecuteTimeout = 2 * time.Minute
	}
	if opts.FindSettle <= 0 {
		opts.FindSettle = 2 * time.Minute
	}
	return &Gate{
		st: opts.Store, execs: opts.Executors, notifier: opts.Notifier,
		expiry: opts.Expiry, snooze: opts.Snooze, delay: max(opts.SendDelay, 0), log: opts.Log, now: opts.Now,
		interval: opts.OutboxInterval, timeout: opts.ExecuteTimeout, settle: opts.FindSettle, kick: make(chan struct{}, 1),
	}, nil
}

// Subscribe registers fn to be called after every committed change of a
// proposal (new, decided, executed, ...). fn must not block.
func (g *Gate) Subscribe(fn func(*Proposal)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listeners = append(g.listeners, fn)
}

func (g *Gate) changed(ps ...*Proposal) {
	g.mu.Lock()
	ls := append([]func(*Proposal){}, g.listeners...)
	g.mu.Unlock()
	for _, p := range ps {
		for _, fn := range ls {
			fn(p)
		}
	}
}

// idAlphabet has no look-alike characters, so ids are easy to type from a phone.
const idAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

func newID() string {
	b := make([]byte, 10)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// ValidID reports whether s could be a proposal id (it is checked against
// the store anyway; this keeps garbage out of queries and logs).
func ValidID(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(idAlphabet, rune(s[i])) {
			return false
		}
	}
	return true
}

func isEmailKind(k Kind) bool { return k == KindReply || k == KindEmail || k == KindForward }

// Propose stores a draft as a pending proposal, with its payload as
// canonical JSON and that JSON's sha256, and tells the owner. A newer
// draft for the same mail thread supersedes older undecided ones. The
// very same action (kind and payload) already pending, snoozed, approved
// or executing is returned as it is instead of being proposed twice.
func (g *Gate) Propose(ctx context.Context, d Draft) (*Proposal, error) {
	canonical, err := Canonical(d.Kind, d.Payload)
	if err != nil {
		return nil, fmt.Errorf("approval: propose: %w", BadInput(err.Error()))
	}
	if d.Origin == "" {
		return nil, fmt.Errorf("approval: propose: %w", BadInput("origin is required (agent, proactive, owner)"))
	}
	if d.Thread == "" && isEmailKind(d.Kind) {
		var ep EmailPayload
		json.Unmarshal(canonical, &ep)
		d.Thread = ep.ThreadID
	}
	thread := d.Thread
	dc, err := g.gather(ctx, d, canonical)
	if err != nil {
		return nil, fmt.Errorf("approval: propose: %w", err)
	}
	warnings, err := g.warn(ctx, dc, canonical)
	if err != nil {
		return nil, fmt.Errorf("approval: propose: %w", err)
	}
	p := g.newProposal(d, canonical, warnings, dc.current, "")
	var replaced []*Proposal
	var same *Proposal
	err = g.st.Tx(ctx, func(tx *store.Tx) error {
		r := inTx(tx)
		// The very same action already waiting or under way (a run resumed
		// after a crash proposes it again): one proposal, so the owner
		// cannot approve it twice.
		open, err := r.list(filter{States: inFlight, Kind: d.Kind, PayloadHash: p.PayloadHash, Limit: 1})
		if err != nil {
			return err
		}
		if len(open) > 0 {
			same = open[0]
			return nil
		}
		if err := r.insert(p); err != nil {
			return err
		}
		if err := r.audit(AuditEntry{Actor: d.Origin, Action: "proposed", ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: p.Title}); err != nil {
			return err
		}
		if thread == "" || !isEmailKind(d.Kind) {
			return nil
		}
		replaced, err = g.supersedeThread(r, thread, p.Created, p.ID, actorSystem, "replaced by a newer draft "+p.ID, undecided)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("approval: propose: %w", err)
	}
	if same != nil {
		g.log.Info("the same action is already proposed", "proposal", same.ID, "origin", d.Origin)
		return same, nil
	}
	g.changed(append(replaced, p)...)
	g.announce(ctx, p, "proposal:"+p.ID)
	return p, nil
}

// newProposal is a pending proposal of d's canonical payload, with the
// warnings bound to its hash.
func (g *Gate) newProposal(d Draft, canonical []byte, warnings []Warning, current *CalendarPayload, supersedes string) *Proposal {
	title := d.Title
	if strings.TrimSpace(title) == "" {
		title = defaultTitle(d.Kind, canonical)
	}
	now := g.now().UTC()
	return &Proposal{
		ID: newID(), Kind: d.Kind, State: StatePending, Title: oneLine(title), Reason: d.Reason, Origin: d.Origin,
		Payload: canonical, PayloadHash: HashProposal(canonical, warnings), Warnings: warnings, Current: current,
		ItemID: d.ItemID, Thread: d.Thread, Created: now, Expires: now.Add(g.expiry), Supersedes: supersedes,
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// announce queues the notification that shows a proposal to the owner.
func (g *Gate) announce(ctx context.Context, p *Proposal, key string) {
	if g.notifier == nil {
		return
	}
	err := g.notifier.Notify(ctx, notify.Message{Level: notify.Important, Key: key, Text: p.Title, ProposalID: p.ID, ItemID: p.ItemID})
	if err != nil {
		// The proposal is stored and listed; only the push is missing.
		g.log.Error("could not queue the proposal for the owner", "proposal", p.ID, "err", err)
	}
}

// Get returns a proposal.
func (g *Gate) Get(ctx context.Context, id string) (*Proposal, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("proposal %q: %w", id, ErrNotFound)
	}
	p, err := g.records(ctx).get(id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("approval: %w", err)
	}
	return p, err
}

// ListOptions filter List.
type ListOptions struct {
	States []State // any state when empty
	Limit  int     // default 500
}

// List returns proposals, newest first.
func (g *Gate) List(ctx context.Context, o ListOptions) ([]*Proposal, error) {
	ps, err := g.records(ctx).list(filter{States: o.States, Limit: o.Limit})
	if err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	if ps == nil {
		ps = []*Proposal{}
	}
	return ps, nil
}

// Audit returns the audit log of one proposal (all of it if id is empty), oldest first.
func (g *Gate) Audit(ctx context.Context, id string, limit int) ([]AuditEntry, error) {
	return g.records(ctx).auditLog(id, limit)
}

// ValidState reports whether s names a state.
func ValidState(s State) bool {
	switch s {
	case StatePending, StateApproved, StateExecuting, StateExecuted, StateFailed, StateRejected, StateExpired, StateSnoozed, StateSuperseded:
		return true
	}
	return false
}

var undecided = []State{StatePending, StateSnoozed}

// inFlight are the states in which a proposal may still be executed.
var inFlight = []State{StatePending, StateSnoozed, StateApproved, StateExecuting}

// Approve approves the proposal if hash is the payload hash the owner was
// shown, the proposal is still undecided and unexpired, and by is the
// owner. The first decision wins; a later one gets a *StaleError with the
// current state. The outbox executes it once the send delay is over
// (ExecuteAfter); until then Undo takes the approval back.
func (g *Gate) Approve(ctx context.Context, id, hash string, by Owner) (*Proposal, error) {
	now := g.now().UTC()
	p, err := g.decide(ctx, id, hash, by, "approved", func(p *Proposal) change {
		return change{ID: p.ID, From: undecided, PayloadHash: hash, UnexpiredAt: now,
			To: StateApproved, Decided: now, DecidedBy: by.String(), ExecuteAfter: now.Add(g.delay)}
	})
	if err != nil {
		return nil, err
	}
	g.Kick()
	return p, nil
}

// Undo takes back an approval whose execution has not begun (the send
// delay): the proposal is pending again and nothing was done. Once the
// outbox has started it, Undo is too late and says so (*StaleError).
func (g *Gate) Undo(ctx context.Context, id string, by Owner) (*Proposal, error) {
	return g.decide(ctx, id, "", by, "undone", func(p *Proposal) change {
		return change{ID: p.ID, From: []State{StateApproved}, PayloadHash: p.PayloadHash, To: StatePending, Undecide: true}
	})
}

// SendDelay is how long an approved proposal waits before it runs.
func (g *Gate) SendDelay() time.Duration { return g.delay }

// Reject rejects an undecided proposal.
func (g *Gate) Reject(ctx context.Context, id string, by Owner) (*Proposal, error) {
	now := g.now().UTC()
	return g.decide(ctx, id, "", by, "rejected", func(p *Proposal) change {
		return change{ID: p.ID, From: undecided, PayloadHash: p.PayloadHash,
			To: StateRejected, Decided: now, DecidedBy: by.String()}
	})
}

// Snooze hides an undecided proposal until the snooze time passes, when it
// is shown again (if it has not expired by then).
func (g *Gate) Snooze(ctx context.Context, id string, by Owner) (*Proposal, error) {
	until := g.now().UTC().Add(g.snooze)
	return g.decide(ctx, id, "", by, "snoozed", func(p *Proposal) change {
		return change{ID: p.ID, From: undecided, PayloadHash: p.PayloadHash, UnexpiredAt: g.now(),
			To: StateSnoozed, SnoozeUntil: &until}
	})
}

// decide runs one owner decision as a compare-and-set and audits it,
// including refusals.
func (g *Gate) decide(ctx context.Context, id, hash string, by Owner, action string, transition func(*Proposal) change) (*Proposal, error) {
	cur, err := g.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	refuse := func(reason error) (*Proposal, error) {
		g.auditOnly(ctx, AuditEntry{Actor: actorName(by), Action: "refused", ProposalID: id, PayloadHash: hash, Detail: action + ": " + reason.Error()})
		return nil, fmt.Errorf("approval: %s %s: %w", action, id, reason)
	}
	if by.name == "" {
		return refuse(ErrNotOwner)
	}
	if action == "approved" && hash != cur.PayloadHash {
		return refuse(ErrHashMismatch)
	}
	c := transition(cur)
	var after *Proposal
	err = g.st.Tx(ctx, func(tx *store.Tx) error {
		r := inTx(tx)
		ok, err := r.transition(c)
		if err != nil || !ok {
			return err
		}
		if err := r.audit(AuditEntry{Actor: by.String(), Action: action, ProposalID: id, PayloadHash: cur.PayloadHash}); err != nil {
			return err
		}
		after, err = r.get(id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("approval: %s %s: %w", action, id, err)
	}
	if after == nil {
		return nil, g.stale(ctx, id)
	}
	g.changed(after)
	return after, nil
}

func actorName(o Owner) string {
	if o.name == "" {
		return "unknown"
	}
	return o.name
}

func (g *Gate) auditOnly(ctx context.Context, e AuditEntry) {
	if err := g.st.Tx(ctx, func(tx *store.Tx) error { return inTx(tx).audit(e) }); err != nil {
		g.log.Error("audit failed", "action", e.Action, "proposal", e.ProposalID, "err", err)
	}
}

// stale builds the answer to a decision that lost: the proposal as it is
// now, expiring it first if its time ran out while it was undecided.
func (g *Gate) stale(ctx context.Context, id string) error {
	if err := g.expireDue(ctx); err != nil {
		g.log.Warn("expiry sweep failed", "err", err)
	}
	cur, err := g.Get(ctx, id)
	if err != nil {
		return err
	}
	return &StaleError{Proposal: cur}
}

// Edit replaces an undecided proposal by a new one with payload: the old
// payload can never be sent, and the new one needs its own approval.
func (g *Gate) Edit(ctx context.Context, id string, payload any, by Owner) (*Proposal, error) {
	return g.Revise(ctx, id, payload, "owner", by)
}

// EditBody is Edit with only the free text changed (mail or comment body,
// event description).
func (g *Gate) EditBody(ctx context.Context, id, body string, by Owner) (*Proposal, error) {
	cur, err := g.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	payload, err := WithBody(cur.Kind, cur.Payload, body)
	if err != nil {
		return nil, fmt.Errorf("approval: edit %s: %w", id, BadInput(err.Error()))
	}
	return g.Revise(ctx, id, payload, "owner", by)
}

// Revise is Edit on the owner's behalf by origin (the owner, or the
// drafter the owner asked to redraft): in one transaction the old proposal
// is superseded and the new one created, pending its own approval.
func (g *Gate) Revise(ctx context.Context, id string, payload any, origin string, by Owner) (*Proposal, error) {
	if by.name == "" {
		return nil, fmt.Errorf("approval: edit %s: %w", id, ErrNotOwner)
	}
	cur, err := g.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	canonical, err := Canonical(cur.Kind, payload)
	if err != nil {
		return nil, fmt.Errorf("approval: edit %s: %w", id, BadInput(err.Error()))
	}
	if bytes.Equal(canonical, cur.Payload) {
		return nil, fmt.Errorf("approval: edit %s: %w", id, BadInput("the new payload is the same as the old one"))
	}
	d := Draft{Kind: cur.Kind, Title: cur.Title, Reason: cur.Reason, Origin: origin, ItemID: cur.ItemID, Thread: cur.Thread}
	dc, err := g.gather(ctx, d, canonical)
	if err != nil {
		return nil, fmt.Errorf("approval: edit %s: %w", id, err)
	}
	warnings, err := g.warn(ctx, dc, canonical)
	if err != nil {
		return nil, fmt.Errorf("approval: edit %s: %w", id, err)
	}
	p := g.newProposal(d, canonical, keepFromContent(cur.Warnings, warnings, recipientsOf(cur.Kind, canonical)), dc.current, cur.ID)
	var old *Proposal
	err = g.st.Tx(ctx, func(tx *store.Tx) error {
		r := inTx(tx)
		ok, err := r.transition(change{ID: cur.ID, From: undecided, PayloadHash: cur.PayloadHash,
			To: StateSuperseded, Decided: p.Created, DecidedBy: by.String(), SupersededBy: p.ID})
		if err != nil || !ok {
			return err
		}
		if err := r.insert(p); err != nil {
			return err
		}
		if err := r.audit(AuditEntry{Actor: by.String(), Action: "edited", ProposalID: cur.ID, PayloadHash: cur.PayloadHash, Detail: "superseded by " + p.ID}); err != nil {
			return err
		}
		if err := r.audit(AuditEntry{Actor: origin, Action: "proposed", ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: "edit of " + cur.ID}); err != nil {
			return err
		}
		old, err = r.get(cur.ID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("approval: edit %s: %w", id, err)
	}
	if old == nil {
		return nil, g.stale(ctx, id)
	}
	g.changed(old, p)
	g.announce(ctx, p, "proposal:"+p.ID)
	return p, nil
}

// BadInputError is a request the caller must fix.
type BadInputError struct{ Msg string }

func (e *BadInputError) Error() string { return e.Msg }

// BadInput returns a *BadInputError.
func BadInput(msg string) error { return &BadInputError{Msg: msg} }

// supersedeThread supersedes the mail proposals of a thread in one of the
// states from that were created before t.
func (g *Gate) supersedeThread(r records, thread string, t time.Time, except, actor, why string, from []State) ([]*Proposal, error) {
	ps, err := r.list(filter{States: from, Thread: thread})
	if err != nil {
		return nil, err
	}
	var out []*Proposal
	for _, p := range ps {
		if p.ID == except || !isEmailKind(p.Kind) || p.Created.After(t) {
			continue
		}
		ok, err := r.transition(change{ID: p.ID, From: from, PayloadHash: p.PayloadHash,
			To: StateSuperseded, Decided: g.now().UTC(), DecidedBy: actor, SupersededBy: except})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := r.audit(AuditEntry{Actor: actor, Action: "superseded", ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: why}); err != nil {
			return nil, err
		}
		p.State, p.SupersededBy = StateSuperseded, except
		out = append(out, p)
	}
	return out, nil
}
