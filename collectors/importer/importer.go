// Package importer loads mail archives (an mbox such as a Google Takeout
// export, a maildir tree such as the Enron corpus) and JSONL documents into
// the store. Imports commit in batches, so a killed import keeps everything
// it acknowledged; a message that cannot be read is reported with its
// place and reason and skipped; importing the same source again adds
// nothing. Imported mail of the last RecentWindow is recorded as an
// "imported" item event: triage decides it quietly, with no notification,
// for the next briefing; older mail produces no events, as years of it
// must not set off anything.
package importer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/store"
)

// RecentWindow is how far back imported mail is triaged (quietly).
const RecentWindow = 7 * 24 * time.Hour

// Formats are the archive formats Import understands.
var Formats = []string{"mbox", "maildir", "jsonl"}

// Options configure an Importer.
type Options struct {
	Store *store.Store
	Log   *slog.Logger
	// BatchSize is the number of items per transaction (default 1000).
	// Each commit rewrites the index pages its items touched and writes
	// a new full-text segment: 250 items a commit cost a third more
	// wall time than 1000 (20k bench mails: 6.3-6.8 s against 4.3 s).
	BatchSize int
	// Now is the clock for durations; time.Now when nil.
	Now func() time.Time
}

// Importer imports archives into the store. It is safe for concurrent use;
// each Import runs on its own.
type Importer struct {
	store *store.Store
	log   *slog.Logger
	batch int
	now   func() time.Time
}

// New returns an Importer.
func New(opts Options) *Importer {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Importer{store: opts.Store, log: opts.Log, batch: opts.BatchSize, now: opts.Now}
}

// Progress is reported while an import runs. Added counts only items whose
// transaction has committed: what it says is durable.
type Progress struct {
	Done  int64  // bytes or messages read so far
	Total int64  // in the same unit; 0 if unknown
	Unit  string // "bytes" or "messages"
	Added int
}

// Failure is one message or line that could not be imported.
type Failure struct {
	Where  string // the file, and the line or byte offset in it
	Reason string
}

// Summary is the result of an import. Seen = Added + Updated + Unchanged +
// len(Failed).
type Summary struct {
	Format    string
	Path      string
	Seen      int
	Added     int
	Updated   int
	Unchanged int
	Failed    []Failure
	// Undated are the messages this import stored (added or changed) with
	// a guessed time because they had no date of their own (Reason says
	// what dated them); counted above too.
	Undated []Failure
	// Kept are copies of messages already stored that did not replace the
	// stored copy (Reason says why: damaged, shorter, undated); counted as
	// unchanged.
	Kept []Failure
	// Recent are the ids of the mails of the last RecentWindow this import
	// stored (new or changed): triage decides them quietly.
	Recent   []int64
	Duration time.Duration
}

// ErrUsage marks errors in the request itself (a missing path, a file
// where a directory is needed, an unknown format): nothing was imported.
var ErrUsage = errors.New("import")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Import imports path in the given format ("mbox", "maildir", "jsonl").
// progress may be nil. The error is non-nil only when the import could not
// run or stopped (bad request, store failure, ctx cancelled); what was
// committed before stays.
func (im *Importer) Import(ctx context.Context, format, path string, progress func(Progress)) (*Summary, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageErr("%s does not exist", path)
		}
		return nil, usageErr("%v", err)
	}
	switch format {
	case "mbox", "jsonl":
		if fi.IsDir() {
			hint := ""
			if format == "mbox" {
				hint = " (for a directory of messages use: import maildir)"
			}
			return nil, usageErr("%s is a directory, not a %s file%s", path, format, hint)
		}
	case "maildir":
		if !fi.IsDir() {
			return nil, usageErr("%s is a file, not a maildir directory (for a single mbox file use: import mbox)", path)
		}
	default:
		return nil, usageErr("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	run := &run{im: im, ctx: ctx, progress: progress, sum: &Summary{Format: format, Path: path},
		seen: map[[16]byte]bool{}, sentFrom: map[string]int{}, start: im.now()}
	switch format {
	case "mbox":
		err = run.mbox(path, fi.Size())
	case "maildir":
		err = run.maildir(path)
	case "jsonl":
		err = run.jsonl(path, fi.Size())
	}
	if err == nil {
		err = run.flush()
	}
	run.sum.Duration = im.now().Sub(run.start)
	if err != nil {
		return run.sum, err
	}
	im.log.Info("import done", "format", format, "path", path, "seen", run.sum.Seen, "added", run.sum.Added,
		"updated", run.sum.Updated, "unchanged", run.sum.Unchanged, "failed", len(run.sum.Failed), "duration", run.sum.Duration)
	return run.sum, nil
}

// record is one parsed item waiting for its batch.
type record struct {
	where   string
	item    *store.Item
	mail    *store.Mail // nil for documents
	recent  bool        // mail of the last RecentWindow, with a date of its own
	undated string      // how its date was guessed, when it had none of its own
	repeat  bool        // this import gave the same source and id before
}

// run is the state of one import.
type run struct {
	im       *Importer
	ctx      context.Context
	progress func(Progress)
	sum      *Summary
	start    time.Time

	pending  []record
	owners   []string          // learned owner addresses not yet saved
	seen     map[[16]byte]bool // hashed ids of this run: a repeat replaces only a worse copy
	sentFrom map[string]int    // From addresses of sent mail, to learn the owner's

	done, total int64
	unit        string
}

func (r *run) fail(where, reason string) {
	r.sum.Seen++
	r.sum.Failed = append(r.sum.Failed, Failure{Where: where, Reason: reason})
}

// add queues a parsed item, flushing when the batch is full.
func (r *run) add(rec record) error {
	r.sum.Seen++
	// The same message twice (in this archive or another source) is one
	// item; the store keeps the better copy.
	// A hash, not the id: a Takeout of a million mails keeps this map small.
	sum := sha256.Sum256([]byte(rec.item.Source + "\x00" + rec.item.ExternalID))
	key := [16]byte(sum[:16])
	rec.repeat = r.seen[key]
	r.seen[key] = true
	rec.recent = r.recent(rec)
	r.pending = append(r.pending, rec)
	if len(r.pending) >= r.im.batch {
		return r.flush()
	}
	return nil
}

// recent reports whether rec is mail of the last RecentWindow whose date
// is its own, not a guess (a day ahead is allowed for skewed clocks).
func (r *run) recent(rec record) bool {
	if rec.mail == nil {
		return false
	}
	if guess, _ := rec.item.Meta["date_uncertain"].(string); guess != "" {
		return false
	}
	now := r.im.now()
	return rec.item.Time.After(now.Add(-RecentWindow)) && rec.item.Time.Before(now.Add(24*time.Hour))
}

// learnOwner counts a sent mail's From; an address seen as the sender of
// two sent mails is the owner's. One is not enough: an assistant's mail
// filed in the boss's sent folder must not make the assistant the owner.
func (r *run) learnOwner(addr string) {
	if addr == "" {
		return
	}
	r.sentFrom[addr]++
	if r.sentFrom[addr] == 2 {
		r.owners = append(r.owners, addr)
	}
}

// flush stores the pending items in one transaction. If the transaction
// fails, the items are retried one by one so one bad item cannot sink
// the others; if every one fails, the store is broken and the import stops.
func (r *run) flush() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if len(r.pending) == 0 && len(r.owners) == 0 {
		return nil
	}
	batch, owners := r.pending, r.owners
	r.pending, r.owners = nil, nil
	var results []store.UpsertResult
	err := r.im.store.Tx(r.ctx, func(tx *store.Tx) error {
		results = results[:0]
		for _, o := range owners {
			if err := tx.AddOwnerAddress(o, "sent-folder"); err != nil {
				return err
			}
		}
		if err := keepFolders(r.ctx, tx, batch); err != nil {
			return err
		}
		items := make([]*store.Item, len(batch))
		for i, rec := range batch {
			items[i] = rec.item
		}
		if err := tx.LookAhead(items); err != nil {
			return err
		}
		for _, rec := range batch {
			res, err := upsert(tx, rec)
			if err != nil {
				return fmt.Errorf("%s: %w", rec.where, err)
			}
			results = append(results, res)
		}
		return nil
	})
	if err == nil {
		for i, res := range results {
			r.count(batch[i], res)
		}
		r.report()
		return nil
	}
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	r.im.log.Warn("import batch failed, retrying one by one", "err", err)
	if len(owners) > 0 {
		if err := r.im.store.AddOwnerAddresses(r.ctx, "sent-folder", owners...); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	failed := 0
	var lastErr error
	for _, rec := range batch {
		var res store.UpsertResult
		err := r.im.store.Tx(r.ctx, func(tx *store.Tx) error {
			if err := keepFolders(r.ctx, tx, []record{rec}); err != nil {
				return err
			}
			var err error
			res, err = upsert(tx, rec)
			return err
		})
		if err != nil {
			if r.ctx.Err() != nil {
				return r.ctx.Err()
			}
			failed++
			lastErr = err
			r.sum.Failed = append(r.sum.Failed, Failure{Where: rec.where, Reason: "store: " + err.Error()})
			continue
		}
		r.count(rec, res)
	}
	if failed == len(batch) {
		return fmt.Errorf("import: the store rejects every item: %w", lastErr)
	}
	r.report()
	return nil
}

// keepFolders keeps the folder stored for a message that comes again
// from the same tree seen from another root: importing ~/Mail after
// ~/Mail/work names work's inbox "work/inbox" instead of "inbox", and
// that is no change to the message. A folder that really differs (the
// message was moved) is an update.
func keepFolders(ctx context.Context, tx *store.Tx, batch []record) error {
	bySource := map[string][]string{}
	for _, rec := range batch {
		if _, ok := rec.item.Meta["folder"].(string); ok {
			bySource[rec.item.Source] = append(bySource[rec.item.Source], rec.item.ExternalID)
		}
	}
	stored := map[[2]string]string{}
	for source, ids := range bySource {
		err := store.Each(ctx, tx, func(r store.Scanner) error {
			var id, folder string
			if err := r.Scan(&id, &folder); err != nil {
				return err
			}
			stored[[2]string{source, id}] = folder
			return nil
		}, `SELECT external_id, COALESCE(json_extract(meta, '$.folder'), '') FROM items
			WHERE source = ? AND external_id IN (`+store.Placeholders(len(ids))+`)`, append([]any{source}, store.Args(ids)...)...)
		if err != nil {
			return fmt.Errorf("import: stored folders: %w", err)
		}
	}
	for _, rec := range batch {
		folder, _ := rec.item.Meta["folder"].(string)
		old, ok := stored[[2]string{rec.item.Source, rec.item.ExternalID}]
		if ok && old != folder && sameFolder(old, folder) {
			rec.item.Meta["folder"] = old
		}
	}
	return nil
}

// sameFolder reports whether two folder paths name one folder seen from
// roots at different depths: one ends with the other.
func sameFolder(a, b string) bool {
	return a == "" || b == "" || strings.HasSuffix(a, "/"+b) || strings.HasSuffix(b, "/"+a)
}

func upsert(tx *store.Tx, rec record) (store.UpsertResult, error) {
	// Old mail records no event: it must not trigger anything. Recent
	// mail is recorded as imported, for triage to decide quietly.
	opts := store.UpsertOptions{OnlyBetter: rec.repeat}
	if rec.recent {
		opts.Event, opts.EventKind = true, store.EventImported
	}
	if rec.mail != nil {
		return tx.UpsertMail(rec.item, *rec.mail, opts)
	}
	return tx.UpsertItem(rec.item, opts)
}

func (r *run) count(rec record, res store.UpsertResult) {
	if rec.recent && (res.Created || res.Changed) {
		r.sum.Recent = append(r.sum.Recent, res.ID)
	}
	// A guessed date is reported when the message is stored, not again
	// on every import of the same archive.
	if rec.undated != "" && (res.Created || res.Changed) {
		r.sum.Undated = append(r.sum.Undated, Failure{Where: rec.where, Reason: rec.undated})
	}
	switch {
	case res.Created:
		r.sum.Added++
	case res.Changed:
		r.sum.Updated++
	default:
		r.sum.Unchanged++
		if res.Kept != "" {
			r.sum.Kept = append(r.sum.Kept, Failure{Where: rec.where, Reason: "kept the stored copy: " + res.Kept})
		}
	}
}

// advance records reading progress and reports it every so often.
func (r *run) advance(done int64) {
	r.done = done
	if r.sum.Seen%50 == 0 {
		r.report()
	}
}

func (r *run) report() {
	r.progress(Progress{Done: r.done, Total: r.total, Unit: r.unit, Added: r.sum.Added})
}

// mailRecord parses one raw message into a record, or says why it cannot.
func mailRecord(raw []byte, parse mailparse.ParseOptions, opts mailparse.ItemOptions, where string) (record, *mailparse.Message, error) {
	m, err := mailparse.ParseWith(raw, parse)
	if err != nil {
		return record{}, nil, errors.New(strings.TrimPrefix(err.Error(), "mailparse: "))
	}
	it, mail := m.Item(opts)
	if err := it.Validate(); err != nil {
		return record{}, nil, err
	}
	return record{where: where, item: it, mail: &mail}, m, nil
}
