// Package gmail collects the owner's mail from the Gmail API as items: a
// first backfill of a configurable window, then incremental syncs from the
// stored historyId (history.list); when Google has forgotten that history
// (404) a bounded resync of the window. Bodies go through mailparse (raw
// format), contacts and threads are counted by the store, the profile
// address is registered as the owner's, and the historyId is saved in the
// transaction of the last items it covers.
package gmail

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	gm "google.golang.org/api/gmail/v1"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/store"
)

// Source is the items' source and Name the collector's (and cursor's) name.
const (
	Source = "gmail"
	Name   = "gmail"
)

// Options configure a Collector.
type Options struct {
	Service *gm.Service // from google.NewGmail
	Store   *store.Store
	// BackfillDays is the window of the first sync and of a resync after
	// the history expired (default 30).
	BackfillDays int
	// MaxMessages bounds a backfill or resync, newest first (default 10000).
	MaxMessages int
	// Fetchers is how many messages are fetched at once (default 4).
	Fetchers int
	// BatchSize is how many items one transaction stores (default 200).
	BatchSize int
	Log       *slog.Logger
	Now       func() time.Time
}

// Result is what one pass did.
type Result struct {
	Mode    string // backfill, incremental, resync
	Seen    int    // messages fetched
	Stored  int    // new or changed items
	Skipped int    // malformed messages, logged and skipped
	Gone    int    // listed, then deleted before they could be fetched
	Deleted int    // stored items removed: deleted for good in Gmail
}

// Collector syncs one mailbox. Collect may be called from several
// goroutines; passes run one at a time.
type Collector struct {
	svc      *gm.Service
	st       *store.Store
	days     int
	max      int
	fetchers int
	batch    int
	log      *slog.Logger
	now      func() time.Time

	mu    sync.Mutex
	owner string // the profile address, registered once per process
	// beforeCursor runs inside the transaction that saves the cursor, after
	// its items: tests fail it to simulate a crash there.
	beforeCursor func() error
}

// New returns a collector.
func New(opts Options) (*Collector, error) {
	if opts.Service == nil || opts.Store == nil {
		return nil, errors.New("gmail collector: service and store are required")
	}
	if opts.BackfillDays <= 0 {
		opts.BackfillDays = 30
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = 10000
	}
	if opts.Fetchers <= 0 {
		opts.Fetchers = 4
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 200
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Collector{svc: opts.Service, st: opts.Store, days: opts.BackfillDays, max: opts.MaxMessages, fetchers: opts.Fetchers,
		batch: opts.BatchSize, log: opts.Log.With("component", "collector.gmail"), now: opts.Now}, nil
}

// Name is the collector's name in the registry and in health.
func (c *Collector) Name() string { return Name }

type cursor struct {
	HistoryID uint64 `json:"history_id,string"`
}

// Collect runs one pass.
func (c *Collector) Collect(ctx context.Context) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	profile, err := c.profile(ctx)
	if err != nil {
		return Result{}, err
	}
	raw, err := c.st.Cursor(ctx, Name)
	if err != nil {
		return Result{}, err
	}
	var cur cursor
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &cur); err != nil {
			c.log.Warn("unreadable gmail cursor; backfilling again", "err", err)
			cur = cursor{}
		}
	}
	if cur.HistoryID == 0 {
		return c.full(ctx, "backfill", profile.HistoryId)
	}
	res, err := c.incremental(ctx, cur.HistoryID)
	if google.IsStatus(err, 404) {
		c.log.Info("gmail history expired (404); resyncing the window", "days", c.days)
		return c.full(ctx, "resync", profile.HistoryId)
	}
	return res, err
}

// profile reads the mailbox profile and, the first time, registers its
// address as the owner's so the owner's own mail counts as outbound.
func (c *Collector) profile(ctx context.Context) (*gm.Profile, error) {
	p, err := c.svc.Users.GetProfile("me").Context(ctx).Do()
	if err != nil {
		return nil, fmt.Errorf("gmail: profile: %w", google.Classify(err, c.now()))
	}
	addr := strings.ToLower(p.EmailAddress)
	if addr != "" && addr != c.owner {
		if err := c.st.AddOwnerAddresses(ctx, Source, addr); err != nil {
			return nil, err
		}
		c.owner = addr
	}
	return p, nil
}

// full stores the window's messages (newest first, at most MaxMessages)
// and then the cursor: the historyId read before listing, so whatever
// arrives meanwhile comes with the next incremental pass. Messages already
// stored are not fetched again, so a pass cut short resumes cheaply.
func (c *Collector) full(ctx context.Context, mode string, startHistory uint64) (Result, error) {
	res := Result{Mode: mode}
	after := c.now().AddDate(0, 0, -c.days)
	var ids []string
	call := c.svc.Users.Messages.List("me").Q("after:" + strconv.FormatInt(after.Unix(), 10)).MaxResults(500)
	err := call.Pages(ctx, func(page *gm.ListMessagesResponse) error {
		for _, m := range page.Messages {
			if len(ids) < c.max {
				ids = append(ids, m.Id)
			}
		}
		if len(ids) >= c.max {
			return errStopPaging
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopPaging) {
		return res, fmt.Errorf("gmail: list messages: %w", google.Classify(err, c.now()))
	}
	todo, err := c.notStored(ctx, ids)
	if err != nil {
		return res, err
	}
	c.log.Info("gmail "+mode, "listed", len(ids), "to_fetch", len(todo), "days", c.days)
	return res, c.fetchAndStore(ctx, todo, startHistory, nil, &res)
}

var errStopPaging = errors.New("enough messages listed")

// incremental applies the history since the cursor. Mail deleted for good
// in Gmail is deleted here too: the owner meant it to be gone.
func (c *Collector) incremental(ctx context.Context, start uint64) (Result, error) {
	res := Result{Mode: "incremental"}
	var added, relabelled, deleted []string
	latest := start
	call := c.svc.Users.History.List("me").StartHistoryId(start).HistoryTypes("messageAdded", "messageDeleted", "labelAdded", "labelRemoved").MaxResults(500)
	err := call.Pages(ctx, func(page *gm.ListHistoryResponse) error {
		for _, h := range page.History {
			for _, a := range h.MessagesAdded {
				added = append(added, a.Message.Id)
			}
			for _, l := range h.LabelsAdded {
				relabelled = append(relabelled, l.Message.Id)
			}
			for _, l := range h.LabelsRemoved {
				relabelled = append(relabelled, l.Message.Id)
			}
			for _, d := range h.MessagesDeleted {
				deleted = append(deleted, d.Message.Id)
			}
		}
		latest = max(latest, page.HistoryId)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("gmail: history since %d: %w", start, google.Classify(err, c.now()))
	}
	// New messages already stored (a pass cut short) are not fetched
	// again; relabelled ones are, for their labels.
	todo, err := c.notStored(ctx, added)
	if err != nil {
		return res, err
	}
	// Sets, not slices: marking a mailbox read or deleting in bulk names
	// thousands of messages in one pass.
	queued := make(map[string]bool, len(todo)+len(relabelled))
	for _, id := range todo {
		queued[id] = true
	}
	for _, id := range relabelled {
		if !queued[id] {
			queued[id] = true
			todo = append(todo, id)
		}
	}
	gone := make(map[string]bool, len(deleted))
	for _, id := range deleted {
		gone[id] = true
	}
	todo = slices.DeleteFunc(todo, func(id string) bool { return gone[id] })
	return res, c.fetchAndStore(ctx, todo, latest, deleted, &res)
}

// notStored keeps the ids (once each, in order) that have no item yet.
func (c *Collector) notStored(ctx context.Context, ids []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		_, err := c.st.ItemByExternalID(ctx, Source, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			out = append(out, id)
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}

// fetched is one message ready to store, or why it is not.
type fetched struct {
	id   string
	item *store.Item
	mail store.Mail
	gone bool  // deleted since it was listed
	bad  error // malformed: logged and skipped
}

// fetchAndStore fetches ids with a few parallel requests, stores them in
// batches, and deletes the deleted ids and saves the cursor in the
// transaction of the last batch.
func (c *Collector) fetchAndStore(ctx context.Context, ids []string, historyID uint64, deleted []string, res *Result) error {
	g, gctx := errgroup.WithContext(ctx)
	work := make(chan string)
	out := make(chan fetched, c.batch) // fetching goes on while a batch is written
	g.Go(func() error {
		defer close(work)
		for _, id := range ids {
			select {
			case work <- id:
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	var workers sync.WaitGroup
	for range c.fetchers {
		workers.Add(1)
		g.Go(func() error {
			defer workers.Done()
			for id := range work {
				f, err := c.fetch(gctx, id)
				if err != nil {
					return err
				}
				select {
				case out <- f:
				case <-gctx.Done():
					return nil
				}
			}
			return nil
		})
	}
	go func() { workers.Wait(); close(out) }()

	var batch []fetched
	var storeErr error
	for f := range out {
		if storeErr != nil {
			continue // drain so the workers can finish
		}
		batch = append(batch, f)
		if len(batch) >= c.batch {
			storeErr = c.store(ctx, batch, 0, nil, res)
			batch = batch[:0]
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if storeErr != nil {
		return storeErr
	}
	return c.store(ctx, batch, historyID, deleted, res)
}

// fetch gets one message in raw format and parses it.
func (c *Collector) fetch(ctx context.Context, id string) (fetched, error) {
	m, err := c.svc.Users.Messages.Get("me", id).Format("raw").Context(ctx).Do()
	if google.IsStatus(err, 404) {
		return fetched{id: id, gone: true}, nil
	}
	if err != nil {
		return fetched{}, fmt.Errorf("gmail: get message %s: %w", id, google.Classify(err, c.now()))
	}
	raw, err := decodeRaw(m.Raw)
	if err != nil {
		return fetched{id: id, bad: fmt.Errorf("raw is not base64url: %w", err)}, nil
	}
	if m.InternalDate > 0 && !strings.HasPrefix(string(raw[:min(len(raw), 5)]), "From ") {
		// An mbox envelope line carrying Gmail's receipt time: mailparse
		// skips it and falls back to its date when the headers have none
		// usable, so such mail is kept rather than dropped.
		raw = append([]byte("From gmail "+time.UnixMilli(m.InternalDate).UTC().Format(time.ANSIC)+"\n"), raw...)
	}
	msg, err := mailparse.Parse(raw)
	if err != nil {
		return fetched{id: id, bad: err}, nil
	}
	it, mail := msg.Item(mailparse.ItemOptions{Source: Source, ExternalID: m.Id, Thread: m.ThreadId, Labels: nonNil(m.LabelIds),
		Outbound: slices.Contains(m.LabelIds, "SENT")})
	if m.InternalDate > 0 {
		it.Time = time.UnixMilli(m.InternalDate).UTC() // when Gmail received it; the Date header can lie
	}
	return fetched{id: id, item: it, mail: mail}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func decodeRaw(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// store writes one batch and deletes the deleted ids; historyID > 0 also
// saves the cursor, after the items, in the same transaction.
func (c *Collector) store(ctx context.Context, batch []fetched, historyID uint64, deleted []string, res *Result) error {
	var stored, skipped, gone, removed int
	err := c.st.Tx(ctx, func(tx *store.Tx) error {
		stored, skipped, gone, removed = 0, 0, 0, 0
		for _, f := range batch {
			switch {
			case f.gone:
				gone++
				continue
			case f.bad == nil:
				f.bad = f.item.Validate() // one unstorable item must not block the rest
			}
			if f.bad != nil {
				c.log.Warn("skipping a malformed message", "id", f.id, "err", f.bad)
				skipped++
				continue
			}
			r, err := tx.UpsertMail(f.item, f.mail, store.UpsertOptions{Event: true, Collected: true})
			if err != nil {
				return err
			}
			if r.Kept != "" {
				c.log.Info("kept the stored copy of a message", "id", f.id, "reason", r.Kept)
			}
			if r.Created || r.Changed {
				stored++
			}
		}
		for _, id := range deleted {
			ok, err := tx.DeleteItem(Source, id)
			if err != nil {
				return err
			}
			if ok {
				removed++
			}
		}
		if historyID == 0 {
			return nil
		}
		if c.beforeCursor != nil {
			if err := c.beforeCursor(); err != nil {
				return err
			}
		}
		b, err := json.Marshal(cursor{HistoryID: historyID})
		if err != nil {
			return err
		}
		return tx.SetCursor(Name, string(b))
	})
	if err != nil {
		return fmt.Errorf("gmail: store messages: %w", err)
	}
	res.Seen += len(batch) - gone
	res.Stored += stored
	res.Skipped += skipped
	res.Gone += gone
	res.Deleted += removed
	return nil
}
