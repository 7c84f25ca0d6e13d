package search

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/store"
)

// metaEmbedder records which embedder made the stored vectors.
const metaEmbedder = "vectors.embedder"

// VectorOptions configure the vector index; zero values get defaults.
type VectorOptions struct {
	Log *slog.Logger
	// ChunkSize (bytes) and MaxChunks bound what of a long item is embedded;
	// the whole text stays searchable by keywords.
	ChunkSize int // default 1500
	MaxChunks int // default 8
	// BatchSize is how many queued items the indexer embeds and stores in
	// one transaction: by default as many as the importer stores in one
	// (1000) with the built-in embedder, 64 with another (a slow one must
	// not hold back the first items' vectors). See embedRequest.
	BatchSize int
	// Poll is how often the indexer looks for queued items when nobody
	// wakes it (default 2s): the store wakes it when items are stored
	// (Store.OnItemsStored); the poll finds what another process stored.
	Poll time.Duration
	// Status, if set, is told about loading, indexing and failures.
	Status func(VectorStatus)
}

func (o *VectorOptions) defaults() {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 1500
	}
	if o.MaxChunks <= 0 {
		o.MaxChunks = 8
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
}

// VectorState says what vector search can do right now.
type VectorState string

const (
	VectorsLoading    VectorState = "loading"    // index not loaded yet: keyword search only
	VectorsReady      VectorState = "ready"      // loaded; Pending items still to embed
	VectorsReindexing VectorState = "reindexing" // the embedder changed: re-embedding everything
	VectorsFailing    VectorState = "failing"    // the embedder fails; items wait in the queue
)

// VectorStatus is the index's health report.
type VectorStatus struct {
	State     VectorState
	Vectors   int // in the in-memory index
	Pending   int // items waiting for (re)embedding
	Embedder  string
	LastError error
}

// Vectors is the semantic half of search: item vectors persisted in SQLite
// and held in memory in an int8 index (index.go). One goroutine (Run, or
// Sync in a one-shot CLI process) writes; searches read concurrently and
// never wait for loading or indexing.
type Vectors struct {
	st   *store.Store
	db   *sql.DB
	emb  embedder.Embedder
	opts VectorOptions
	log  *slog.Logger

	idx  atomic.Pointer[vecIndex] // nil until loaded
	wake chan struct{}
	// lastStored is when items were last stored (Notify), in Unix ns.
	lastStored atomic.Int64
	// firsts are the vectors of the last embedded items' first chunks.
	firsts chunkCache

	mu     sync.Mutex // guards status
	status VectorStatus
}

// NewVectors returns the vector index over st using emb. Nothing is loaded
// until Run or Sync.
func NewVectors(st *store.Store, emb embedder.Embedder, opts VectorOptions) *Vectors {
	opts.defaults()
	if opts.BatchSize <= 0 {
		opts.BatchSize = embedRequest
		if _, ok := emb.(*embedder.Builtin); ok {
			// During an import the indexer gets the write lock only
			// between two of the importer's transactions: 64 items at a
			// time, 85% of an import's items were still queued when it
			// returned and were embedded after it, with one core idle.
			// A batch of the importer's size is embedded beside the
			// importer's next transaction (100k bench mails, until all
			// embedded: 41.1 s against 30.0 s; 81k against 2k items
			// queued when the import returned; same vectors).
			opts.BatchSize = 1000
		}
	}
	v := &Vectors{st: st, db: st.DB(), emb: emb, opts: opts, log: opts.Log, wake: make(chan struct{}, 1)}
	v.status = VectorStatus{State: VectorsLoading, Embedder: emb.Identity()}
	st.OnItemsStored(v.Notify)
	return v
}

// Status reports the index's state.
func (v *Vectors) Status() VectorStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.status
}

func (v *Vectors) setStatus(f func(*VectorStatus)) {
	v.mu.Lock()
	f(&v.status)
	if idx := v.idx.Load(); idx != nil {
		v.status.Vectors = idx.size()
	}
	st := v.status
	v.mu.Unlock()
	if v.opts.Status != nil {
		v.opts.Status(st)
	}
}

// Ready reports whether the in-memory index is loaded.
func (v *Vectors) Ready() bool { return v.idx.Load() != nil }

// Notify tells the indexer that items were stored, so it need not wait
// for its next poll.
func (v *Vectors) Notify() {
	v.lastStored.Store(time.Now().UnixNano())
	v.wakeUp()
}

// WritesDone tells the indexer that the writer it left a core to (an
// import) has finished, so that it embeds what the import left queued on
// every core at once rather than after writerActive: through the binary,
// 100k bench mails, the daemon's CPU in the second after the import
// returned went from one core to two.
func (v *Vectors) WritesDone() {
	v.lastStored.Store(0)
	v.wakeUp()
}

// wakeUp ends the indexer's wait for its next poll, if it is waiting.
func (v *Vectors) wakeUp() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// bulkIndexed is how many items indexed since the last release make the
// indexer return freed memory to the system once it has been quiet for a
// poll.
const bulkIndexed = 100_000

// bulkGCPercent is the collector's target while the indexer works through
// a backlog (an import). The daemon's usual target is low to keep a large
// index's memory small when idle; during an import the heap is mostly
// short-lived garbage, and collecting it at the low target took a tenth of
// the import's CPU time (100k items: 75.6 CPU-s at GOGC 25, 68.1 at 100).
const bulkGCPercent = 100

// collectLess raises the collector's target to bulkGCPercent unless it is
// higher or off already, and returns what restores it.
func collectLess() (restore func()) {
	prev := setGCPercent(bulkGCPercent)
	if prev < 0 || prev >= bulkGCPercent {
		setGCPercent(prev)
		return func() {}
	}
	return func() { setGCPercent(prev) }
}

// setGCPercent is debug.SetGCPercent; tests watch it.
var setGCPercent = debug.SetGCPercent

// Run loads the index, then keeps it in step with the items until ctx is
// done: it embeds queued items, drops deleted ones, retries a failing
// embedder with backoff and re-embeds everything when the embedder changed.
func (v *Vectors) Run(ctx context.Context) error {
	if err := v.prepare(ctx); err != nil {
		return err
	}
	failing := retry.Policy{Initial: time.Second, Max: 5 * time.Minute}.Backoff()
	indexed := 0      // since the queue last drained
	sinceRelease := 0 // since memory was last given back
	var restoreGC func()
	defer func() {
		if restoreGC != nil {
			restoreGC()
		}
	}()
	var w roundWriter
	defer w.wait()
	for {
		n, err := v.indexNext(ctx, &w)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			wait = failing.NextBackOff()
			v.log.Warn("embedding failed; items stay queued", "err", err, "retry_in", wait)
			v.setStatus(func(s *VectorStatus) { s.State, s.LastError = VectorsFailing, err })
		case n > 0:
			failing.Reset()
			indexed += n
			if n >= v.opts.BatchSize && restoreGC == nil {
				restoreGC = collectLess()
			}
			continue
		default:
			failing.Reset()
			wait = v.opts.Poll
			if restoreGC != nil {
				restoreGC()
				restoreGC = nil
			}
			sinceRelease += indexed
			indexed = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-v.wake:
		case <-time.After(wait):
			if sinceRelease >= bulkIndexed {
				// Quiet for a poll after bulk indexing: the arrays the
				// index outgrew and the embedder's caches are garbage;
				// give them back now rather than at the scavenger's pace.
				if b, ok := v.emb.(*embedder.Builtin); ok {
					b.DropCaches()
				}
				debug.FreeOSMemory()
				sinceRelease = 0
			}
		}
	}
}

// Sync loads the index and embeds everything queued, for processes that
// do not run the background loop (a CLI command without a daemon).
func (v *Vectors) Sync(ctx context.Context) error {
	if !v.Ready() {
		if err := v.prepare(ctx); err != nil {
			return err
		}
	}
	for {
		n, err := v.IndexPending(ctx)
		if err != nil {
			v.setStatus(func(s *VectorStatus) { s.State, s.LastError = VectorsFailing, err })
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// prepare resets the stored vectors if the embedder changed and loads the
// index from SQLite.
func (v *Vectors) prepare(ctx context.Context) error {
	reindex, err := v.checkIdentity(ctx)
	if err != nil {
		return err
	}
	if err := v.Load(ctx); err != nil {
		return err
	}
	pending, _ := v.pending(ctx)
	v.setStatus(func(s *VectorStatus) {
		s.State, s.Pending = VectorsReady, pending
		if reindex {
			s.State = VectorsReindexing
		}
	})
	return nil
}

// checkIdentity compares the embedder with the one that made the stored
// vectors; when they differ every item is queued for re-embedding and the
// old vectors are dropped (they cannot be compared with new queries).
func (v *Vectors) checkIdentity(ctx context.Context) (bool, error) {
	id := v.emb.Identity()
	old, err := v.st.Meta(ctx, metaEmbedder)
	if err != nil {
		return false, err
	}
	if old == id {
		return false, nil
	}
	err = v.st.Tx(ctx, func(tx *store.Tx) error {
		for _, table := range []string{"item_vectors", "chunk_vectors"} {
			if _, err := tx.Exec(`DELETE FROM ` + table); err != nil {
				return fmt.Errorf("drop old vectors: %w", err)
			}
		}
		if _, err := tx.Exec(`INSERT OR IGNORE INTO vector_queue (item_id) SELECT id FROM items`); err != nil {
			return fmt.Errorf("queue re-embedding: %w", err)
		}
		return tx.SetMeta(metaEmbedder, id)
	})
	if err != nil {
		return false, fmt.Errorf("vectors: switch embedder: %w", err)
	}
	if old != "" {
		v.log.Info("embedder changed: re-embedding every item in the background", "from", old, "to", id)
	}
	return old != "", nil
}

func (v *Vectors) pending(ctx context.Context) (int, error) {
	var n int
	err := v.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM vector_queue`).Scan(&n)
	return n, err
}

// Load reads every item's stored vector into a fresh in-memory index and
// swaps it in; searches keep using the previous index (or keywords only)
// meanwhile.
func (v *Vectors) Load(ctx context.Context) error {
	start := time.Now()
	var n int
	if err := v.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM item_vectors`).Scan(&n); err != nil {
		return fmt.Errorf("vectors: count: %w", err)
	}
	var idx *vecIndex
	// RawBytes reuses one buffer instead of copying every blob.
	var blob sql.RawBytes
	err := store.Each(ctx, v.db, func(r store.Scanner) error {
		var item int64
		if err := r.Scan(&item, &blob); err != nil {
			return err
		}
		if idx == nil {
			idx = newVecIndex(len(blob)-4, n)
		}
		if err := idx.add(item, blob); err != nil {
			v.log.Warn("skipping a stored vector", "err", err)
		}
		return nil
	}, `SELECT item_id, vector FROM item_vectors`)
	if err != nil {
		return fmt.Errorf("vectors: load: %w", err)
	}
	if idx == nil {
		idx = newVecIndex(v.emb.Dimension(), 0)
	}
	v.idx.Store(idx)
	v.log.Info("vector index loaded", "items", idx.size(), "took", time.Since(start).Round(time.Millisecond))
	v.setStatus(func(*VectorStatus) {})
	return nil
}

// IndexPending embeds up to one batch of queued items and stores their
// vectors; it returns how many queue entries it settled. Items whose
// embedding fails stay queued and the error is returned.
func (v *Vectors) IndexPending(ctx context.Context) (int, error) {
	r, err := v.embedRound(ctx, nil)
	if err != nil || r == nil {
		return 0, err
	}
	if err := v.storeRound(ctx, r); err != nil {
		return 0, err
	}
	return len(r.ids), nil
}

// indexRound is one batch of queued items, embedded and encoded, to be
// stored.
type indexRound struct {
	ids      []int64
	hashes   map[int64]string // the items' content hashes as their texts were read
	encoded  []encodedItem
	embedded map[int64]bool // ids that had vectors already
	requeue  []int64        // answers to embed again (see embedRound)
}

// embedRound embeds up to one batch of queued items, leaving out those
// of skip (a round being stored); nil when nothing is queued.
func (v *Vectors) embedRound(ctx context.Context, skip []int64) (*indexRound, error) {
	queued, err := store.Collect(ctx, v.db, store.Value[int64], `SELECT item_id FROM vector_queue ORDER BY item_id LIMIT ?`, v.opts.BatchSize+len(skip))
	if err != nil {
		return nil, fmt.Errorf("vectors: read queue: %w", err)
	}
	storing := make(map[int64]bool, len(skip))
	for _, id := range skip {
		storing[id] = true
	}
	ids := queued[:0]
	for _, id := range queued {
		if len(ids) < v.opts.BatchSize && !storing[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	nb, err := threadNeighbours(ctx, v.db, ids)
	if err != nil {
		return nil, err
	}
	// Embedded and encoded a part at a time: only the encoded vectors of
	// the whole batch are held, not the float ones (a part's items find
	// the previous part's first chunks in v.firsts).
	encoded := make([]encodedItem, len(ids))
	hashes := make(map[int64]string, len(ids)) // as the texts were read (storeRound)
	for from := 0; from < len(ids); from += embedPart {
		part := ids[from:min(len(ids), from+embedPart)]
		items, err := v.st.ItemTexts(ctx, part)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			hashes[it.ID] = it.Hash
		}
		byItem, err := v.itemVectors(ctx, items, nb)
		if err != nil {
			return nil, err
		}
		// Encoded before the transaction: the importer waits for its lock.
		onCores(v.cores(), len(part), 1, func(i int) { encoded[from+i] = encodeItem(byItem[part[i]]) })
	}
	// A message stored before the one it answers (mail imported out of
	// time order) was embedded with another message before it: once the
	// new one has its vector, the answer is embedded again. UpsertItem
	// queues only the new item (migration 0022); updates and deletes
	// queue their neighbours by trigger.
	embedded := map[int64]bool{}
	err = store.Each(ctx, v.db, func(r store.Scanner) error {
		var id int64
		err := r.Scan(&id)
		embedded[id] = true
		return err
	}, `SELECT item_id FROM item_vectors WHERE item_id IN (`+store.Placeholders(len(ids))+`)`, store.Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("vectors: read stored: %w", err)
	}
	var requeue []int64
	for _, id := range ids {
		if next := nb[id][1]; next != 0 && !embedded[id] && !slices.Contains(ids, next) {
			requeue = append(requeue, next)
		}
	}
	return &indexRound{ids: ids, hashes: hashes, encoded: encoded, embedded: embedded, requeue: requeue}, nil
}

// storeRound stores a round's vectors and adds them to the index.
func (v *Vectors) storeRound(ctx context.Context, r *indexRound) error {
	ids, encoded := r.ids, r.encoded
	// Store and index in one go; the queue entry goes in the same
	// transaction, so a crash re-embeds rather than loses an item. Each
	// statement covers many items: the importer waits while this holds
	// the write lock, and a statement per item and table held it about
	// 15% longer.
	means := make(map[int64][]byte, len(ids))
	err := v.st.Tx(ctx, func(tx *store.Tx) error {
		// What became of the items since their texts were read: deleted
		// ones get no vectors; changed ones stay queued, as their update
		// found them queued already and queued nothing.
		hashes := make(map[int64]string, len(ids))
		for part := range slices.Chunk(ids, store.MaxVariables) {
			err := store.Each(tx.Context(), tx, func(row store.Scanner) error {
				var id int64
				var hash string
				err := row.Scan(&id, &hash)
				hashes[id] = hash
				return err
			}, `SELECT id, content_hash FROM items WHERE id IN (`+store.Placeholders(len(part))+`)`, store.Args(part)...)
			if err != nil {
				return err
			}
		}
		var stale, itemRows, chunkRows, done []any
		for i, id := range ids {
			if r.embedded[id] {
				stale = append(stale, id)
			}
			hash, live := hashes[id]
			if enc := encoded[i]; live && enc.mean != nil {
				means[id] = enc.mean
				itemRows = append(itemRows, id, enc.mean)
				for chunk, b := range enc.chunks {
					chunkRows = append(chunkRows, id, chunk, b)
				}
			}
			if !live || hash == r.hashes[id] {
				done = append(done, id)
			}
		}
		for _, table := range []string{"item_vectors", "chunk_vectors"} {
			if err := tx.ExecRows(`DELETE FROM `+table+` WHERE item_id IN (%s)`, 1, stale); err != nil {
				return err
			}
		}
		if err := tx.ExecRows(`INSERT INTO item_vectors (item_id, vector) VALUES %s`, 2, itemRows); err != nil {
			return err
		}
		if err := tx.ExecRows(`INSERT INTO chunk_vectors (item_id, chunk, vector) VALUES %s`, 3, chunkRows); err != nil {
			return err
		}
		if err := tx.ExecRows(`DELETE FROM vector_queue WHERE item_id IN (%s)`, 1, done); err != nil {
			return err
		}
		return tx.ExecRows(`INSERT OR IGNORE INTO vector_queue (item_id)
			SELECT item_id FROM item_vectors WHERE item_id IN (%s)`, 1, store.Args(r.requeue))
	})
	if err != nil {
		return fmt.Errorf("vectors: store: %w", err)
	}
	if idx := v.idx.Load(); idx != nil {
		for _, id := range ids {
			if means[id] == nil {
				idx.remove(id)
				continue
			}
			if err := idx.add(id, means[id]); err != nil {
				return err
			}
		}
	}
	pending, _ := v.pending(ctx)
	v.setStatus(func(s *VectorStatus) {
		if s.State == VectorsFailing {
			s.State = VectorsReady
		}
		if s.State == VectorsReindexing && pending == 0 {
			s.State = VectorsReady
		}
		s.Pending, s.LastError = pending, nil
	})
	return nil
}

// roundWriter stores the indexer's rounds on a goroutine of its own, one
// at a time, so that the next round is embedded while the last one waits
// for the write lock and is written: during an import the importer holds
// that lock most of the time, and the embedding stopped for every wait.
type roundWriter struct {
	round *indexRound // being stored; nil when none
	done  chan error
}

// start stores r in the background; the caller has waited for the last.
// A panic comes back as an error, as it would have from Run's own
// goroutine to its supervisor.
func (w *roundWriter) start(ctx context.Context, v *Vectors, r *indexRound) {
	done := make(chan error, 1)
	w.round, w.done = r, done
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("vectors: storing a round panicked: %v", p)
			}
		}()
		done <- v.storeRound(ctx, r)
	}()
}

// wait waits for the round being stored, if any, and returns its error.
func (w *roundWriter) wait() error {
	if w.round == nil {
		return nil
	}
	err := <-w.done
	w.round, w.done = nil, nil
	return err
}

// indexNext embeds the next round while w stores the last one, then hands
// it to w; it returns how many items it embedded, 0 once nothing is queued
// and nothing is being stored.
func (v *Vectors) indexNext(ctx context.Context, w *roundWriter) (int, error) {
	var skip []int64
	if w.round != nil {
		skip = w.round.ids
	}
	r, err := v.embedRound(ctx, skip)
	if werr := w.wait(); werr != nil {
		return 0, werr // r's items stay queued: embedded again next time
	}
	if err != nil || r == nil {
		return 0, err
	}
	w.start(ctx, v, r)
	return len(r.ids), nil
}

// encodedItem is an item's vectors as stored: its mean (int8, nil when
// it has none) and its chunks' (chunkVec.encode).
type encodedItem struct {
	mean   []byte
	chunks [][]byte
}

func encodeItem(chunks []chunkVec) encodedItem {
	mean := itemVector(chunks)
	if mean == nil {
		return encodedItem{}
	}
	out := encodedItem{mean: encodeInt8(mean), chunks: make([][]byte, len(chunks))}
	for i, cv := range chunks {
		out.chunks[i] = cv.encode()
	}
	return out
}

// onCores calls fn for 0..n-1 on up to cores goroutines, each taking
// share indexes at a time, and returns when all are done.
func onCores(cores, n, share int, fn func(i int)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(cores, (n+share-1)/share) {
		wg.Go(func() {
			for {
				from := int(next.Add(int64(share))) - share
				if from >= n {
					return
				}
				for i := from; i < min(n, from+share); i++ {
					fn(i)
				}
			}
		})
	}
	wg.Wait()
}

// chunks is the text of an item that gets embedded: the title with each
// piece of the body.
func (v *Vectors) chunks(it store.ItemText) []string {
	body := embedder.Chunks(it.Body, v.opts.ChunkSize, v.opts.MaxChunks)
	if len(body) == 0 {
		if strings.TrimSpace(it.Title) == "" {
			return nil
		}
		return []string{it.Title}
	}
	if it.Title != "" {
		for i := range body {
			body[i] = it.Title + "\n" + body[i]
		}
	}
	return body
}

// Weights of the neighbours: a message is read in the light of the one it
// answers and, less, of the answer it got. An item's vector mixes in only
// the message before it (contextPrev), which is stored before it in a
// mailbox read in time order: mixing in the answer too made every reply
// re-embed the message it answers, a third more embedding in an import,
// for 0.8 points of LoCoMo-dev hybrid recall@10 (77.5 against 76.7). The
// keyword half reads both neighbours (ftsSearchContext), at query time.
const (
	contextPrev = 0.5
	contextNext = 0.3
)

// chunkVec is one chunk's vectors: narrow, the embedder's own, and wide
// (built-in embedder only), more exact, for re-ranking.
type chunkVec struct{ narrow, wide []float32 }

// encode is the chunk's re-ranking vector as stored: the wide one when
// there is one, else the narrow one, in four bits a dimension (see
// encodeInt4).
func (c chunkVec) encode() []byte {
	if c.wide != nil {
		return encodeInt4(c.wide)
	}
	return encodeInt4(c.narrow)
}

// itemVector is what the in-memory index holds of an item: the normalised
// sum of its chunks' narrow vectors (nil if it has none). One vector per
// item instead of one per chunk: fewer and smaller entries in memory,
// close enough to find an item among the candidates that the chunks then
// re-rank exactly.
func itemVector(chunks []chunkVec) []float32 {
	var sum []float32
	for _, c := range chunks {
		if c.narrow == nil {
			continue
		}
		if sum == nil {
			sum = make([]float32, len(c.narrow))
		}
		if len(c.narrow) != len(sum) {
			continue
		}
		for i, x := range c.narrow {
			sum[i] += x
		}
	}
	if sum == nil || !embedder.Normalize(sum) {
		return nil
	}
	return sum
}

// itemVectors computes the vectors of the items' chunks, each mixed with
// the first chunk of the message before it in its thread; nb are the
// items' neighbours in their threads (threadNeighbours).
func (v *Vectors) itemVectors(ctx context.Context, items []store.ItemText, nb map[int64][2]int64) (map[int64][]chunkVec, error) {
	var prevIDs []int64
	for _, p := range nb {
		if p[0] != 0 {
			prevIDs = append(prevIDs, p[0])
		}
	}
	nbItems, err := v.st.ItemTexts(ctx, prevIDs)
	if err != nil {
		return nil, err
	}

	// Every text to embed: each item's chunks, then each previous message's
	// first, unless it was embedded lately.
	var texts []string
	type span struct{ from, n int }
	own := map[int64]span{}
	for _, it := range items {
		cs := v.chunks(it)
		own[it.ID] = span{len(texts), len(cs)}
		texts = append(texts, cs...)
	}
	first := map[int64]int{}
	recent := map[int64]chunkVec{}
	for _, it := range append(slices.Clone(items), nbItems...) {
		if _, done := first[it.ID]; done {
			continue
		}
		if sp, ok := own[it.ID]; ok && sp.n > 0 {
			first[it.ID] = sp.from
			continue
		}
		if cs := v.chunks(it); len(cs) > 0 {
			if cv, ok := v.firsts.get(cs[0]); ok {
				recent[it.ID] = cv
				continue
			}
			first[it.ID] = len(texts)
			texts = append(texts, cs[0])
		}
	}
	vecs, err := v.embedAll(ctx, texts)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if sp := own[it.ID]; sp.n > 0 {
			v.firsts.put(texts[sp.from], vecs[sp.from])
		}
	}

	out := map[int64][]chunkVec{}
	for _, it := range items {
		sp := own[it.ID]
		var prev chunkVec
		if nid := nb[it.ID][0]; nid != 0 {
			if at, ok := first[nid]; ok {
				prev = vecs[at]
			} else {
				prev = recent[nid]
			}
		}
		for i := sp.from; i < sp.from+sp.n; i++ {
			if vecs[i].narrow == nil {
				continue
			}
			out[it.ID] = append(out[it.ID], mixContext(vecs[i], prev))
		}
	}
	return out, nil
}

// firstChunks is how many items' first chunks the indexer remembers.
// A message's vector mixes in the first chunk of the one before it in
// its thread, which an import embedded a few hundred items earlier (in
// the bench's mail, always fewer than 512): re-embedding it was a
// seventh of the embedding. 1024 entries hold about 10 MB.
const firstChunks = 1024

// chunkCache remembers the vectors of recently embedded texts, the
// oldest forgotten first. Keyed by the text itself, an entry cannot
// outlive a change of the item it came from.
type chunkCache struct {
	mu     sync.Mutex
	byText map[string]chunkVec
	ring   []string
	next   int
}

func (c *chunkCache) get(text string) (chunkVec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cv, ok := c.byText[text]
	return cv, ok
}

func (c *chunkCache) put(text string, cv chunkVec) {
	if cv.narrow == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byText == nil {
		c.byText = make(map[string]chunkVec, firstChunks)
		c.ring = make([]string, firstChunks)
	}
	if _, ok := c.byText[text]; ok {
		return
	}
	if old := c.ring[c.next]; old != "" {
		delete(c.byText, old)
	}
	c.ring[c.next] = text
	c.byText[text] = cv
	c.next = (c.next + 1) % len(c.ring)
}

// mixContext adds the previous message's vectors to an item's, normalised
// again.
func mixContext(self, prev chunkVec) chunkVec {
	mix := func(a, b []float32) []float32 {
		if a == nil {
			return nil
		}
		out := slices.Clone(a)
		if len(b) == len(out) {
			for i := range out {
				out[i] += contextPrev * b[i]
			}
		}
		embedder.Normalize(out)
		return out
	}
	return chunkVec{narrow: mix(self.narrow, prev.narrow), wide: mix(self.wide, prev.wide)}
}

// threadNeighbours returns, per item, the ids of the items just before and
// after it in its thread (0 when none).
func threadNeighbours(ctx context.Context, db store.Querier, ids []int64) (map[int64][2]int64, error) {
	out := map[int64][2]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	err := store.Each(ctx, db, func(r store.Scanner) error {
		var id, prev, next int64
		if err := r.Scan(&id, &prev, &next); err != nil {
			return err
		}
		out[id] = [2]int64{prev, next}
		return nil
	}, threadNeighboursQuery(len(ids)), store.Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("vectors: thread neighbours: %w", err)
	}
	return out, nil
}

// threadNeighboursQuery reads the neighbours of n items. The row values
// ((time, id) < (c.time, c.id)) let SQLite seek to the item's place in
// the thread's index; spelled as "time < c.time OR (time = c.time AND
// id < c.id)" the seek stopped at the thread, and each neighbour cost a
// walk along it (100 items of a 5,000-mail thread: 70-100 ms a search).
func threadNeighboursQuery(n int) string {
	return `SELECT c.id,
		COALESCE((SELECT p.id FROM items p WHERE p.source = c.source AND p.thread = c.thread
			AND (p.time, p.id) < (c.time, c.id) ORDER BY p.time DESC, p.id DESC LIMIT 1), 0),
		COALESCE((SELECT n.id FROM items n WHERE n.source = c.source AND n.thread = c.thread
			AND (n.time, n.id) > (c.time, c.id) ORDER BY n.time, n.id LIMIT 1), 0)
		FROM items c WHERE c.thread != '' AND c.id IN (` + store.Placeholders(n) + `)`
}

// writerActive is how recently items must have been stored for the
// indexer to take the writer as busy (see cores).
const writerActive = time.Second

// cores is how many cores the indexer embeds on: all of them, but one
// while items are being stored. An import's writer holds SQLite's write
// lock for most of the import and is what the import waits for; sharing
// its core with the embedder slowed the import more than the embedding
// gained (100k bench mails on 2 cores, until all embedded: 40.0 s on
// both cores, 34.7-35.6 s leaving the writer one).
func (v *Vectors) cores() int {
	n := runtime.GOMAXPROCS(0)
	if n > 1 && time.Since(time.Unix(0, v.lastStored.Load())) < writerActive {
		return n - 1
	}
	return n
}

// embedPart is how many items the indexer embeds at a time: a batch of
// 1000 embedded at once held 40 MB of float vectors (100k bench mails:
// peak RSS 167 MB against 116 MB with batches of 64).
const embedPart = 250

// embedRequest is how many texts an embedder other than the built-in one
// gets in one request.
const embedRequest = 64

// embedShare is how many texts a worker of embedAll takes at a time.
const embedShare = 8

// embedAll embeds texts; a text with nothing to embed gets empty vectors
// instead of failing its batch.
func (v *Vectors) embedAll(ctx context.Context, texts []string) ([]chunkVec, error) {
	out := make([]chunkVec, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	if b, ok := v.emb.(*embedder.Builtin); ok {
		// The built-in embedder is CPU work: on every core the writer
		// leaves free (cores), so that an import's items get their
		// vectors about as fast as they are stored.
		onCores(v.cores(), len(texts), embedShare, func(i int) { out[i].narrow, out[i].wide = b.Dual(texts[i], nil) })
		return out, nil
	}
	var keep []string
	var at []int
	for i, t := range texts {
		if strings.TrimSpace(t) != "" {
			keep = append(keep, t)
			at = append(at, i)
		}
	}
	if len(keep) == 0 {
		return out, nil
	}
	for from := 0; from < len(keep); from += embedRequest {
		to := min(len(keep), from+embedRequest)
		vecs, err := v.emb.Embed(ctx, keep[from:to])
		if err != nil {
			return nil, err
		}
		for i, vec := range vecs {
			out[at[from+i]].narrow = vec
		}
	}
	return out, nil
}

// encodeInt8 stores a unit vector as int8 with its scale in front (a
// little-endian float32): a quarter of the float32 size, and exact enough
// for ranking.
func encodeInt8(v []float32) []byte {
	maxAbs := largestMagnitude(v)
	b := make([]byte, 4+len(v))
	if maxAbs == 0 {
		return b
	}
	scale := maxAbs / 127
	binary.LittleEndian.PutUint32(b, math.Float32bits(scale))
	inv := 1 / scale
	for i, x := range v {
		// x*inv is in [-127, 127]: shifted to be positive, truncation
		// rounds it, without a branch on the sign or math.Round's cost on
		// each of 2048 dimensions of every chunk.
		b[4+i] = byte(int8(int32(x*inv+128.5) - 128))
	}
	return b
}

// dotInt8 is the inner product of a float32 query and a stored int8 vector.
func dotInt8(q []float32, b []byte) (float32, bool) {
	if len(b) != 4+len(q) {
		return 0, false
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	var s float32
	for i, x := range q {
		s += x * float32(int8(b[4+i]))
	}
	return s * scale, true
}

// encodeInt4 stores a unit vector in four bits a dimension (-7..7, two
// to a byte, low nibble first) with its scale in front, for the chunk
// vectors that only re-rank candidates. At 2048 dimensions a chunk's int8
// vector took 2,052 bytes, and two such rows do not fit in a 4 KiB page:
// each took a page of its own, half of a home's size. In int4 three fit
// (1,028 bytes), and the ranking barely moves (LoCoMo-dev, known items:
// see the commit that made it).
func encodeInt4(v []float32) []byte {
	maxAbs := largestMagnitude(v)
	b := make([]byte, 4+(len(v)+1)/2)
	if maxAbs == 0 {
		return b
	}
	scale := maxAbs / 7
	binary.LittleEndian.PutUint32(b, math.Float32bits(scale))
	inv := 1 / scale
	// As in encodeInt8: shifted to be positive, truncation rounds.
	nibble := func(x float32) byte { return byte(int32(x*inv+8.5)-8) & 0x0f }
	out := b[4:]
	for i := 0; i+1 < len(v); i += 2 {
		out[i/2] = nibble(v[i]) | nibble(v[i+1])<<4
	}
	if len(v)%2 == 1 {
		out[len(out)-1] = nibble(v[len(v)-1])
	}
	return b
}

// largestMagnitude is the largest |x| of v. Not max(x, -x): its NaN and
// signed-zero rules made this loop a fifth of the int4 encoding; unit
// vectors have neither.
func largestMagnitude(v []float32) float32 {
	var m float32
	for _, x := range v {
		if x > m {
			m = x
		} else if -x > m {
			m = -x
		}
	}
	return m
}

// dotInt4 is the inner product of a float32 query and a stored int4 vector.
func dotInt4(q []float32, b []byte) (float32, bool) {
	if len(b) != 4+(len(q)+1)/2 {
		return 0, false
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	var s float32
	for i := 0; i+1 < len(q); i += 2 {
		c := b[4+i/2]
		// The nibble moved to the top of an int8, shifted back with its sign.
		s += q[i]*float32(int8(c<<4)>>4) + q[i+1]*float32(int8(c)>>4)
	}
	if len(q)%2 == 1 {
		s += q[len(q)-1] * float32(int8(b[len(b)-1]<<4)>>4)
	}
	return s * scale, true
}

// dotChunk is the inner product of a query and a stored chunk vector:
// int4, or int8 as chunks were stored before int4 (they stay valid).
func dotChunk(q []float32, b []byte) (float32, bool) {
	if s, ok := dotInt4(q, b); ok {
		return s, true
	}
	return dotInt8(q, b)
}

// exactItems is the size up to which every item is a candidate: the
// index's narrow vectors would only lose some (a misspelt word, for one,
// shares too little with the right item's narrow vector to rank it
// reliably), and re-ranking a thousand items from SQLite takes a few
// milliseconds.
const exactItems = 1000

// candidates is how many of size items the index proposes for re-ranking
// when a search keeps n vector hits: every item of a small index, else 4n.
// Its one narrow vector per item finds the right items less surely than
// their chunks' stored vectors rank them: on real mail, 4n candidates held
// a known mail about 65% of the time where 2n did 50% (at 128 dimensions).
func candidates(n, size int) int {
	if size <= exactItems {
		return size
	}
	return 4 * n
}

// vecHit is one item's similarity.
type vecHit struct {
	item int64
	sim  float32
}

// nearest returns the candidates for n vector hits from the index, best
// first.
func (v *Vectors) nearest(ctx context.Context, q []float32, n int) ([]vecHit, error) {
	idx := v.idx.Load()
	if idx == nil {
		return nil, nil
	}
	return idx.query(q, candidates(n, idx.size())), nil
}

// nearestAmong returns up to n of the given items nearest to q: under a
// filter, scoring the items it selects beats scanning the whole index and
// filtering afterwards, which misses everything when the filter is narrow.
func (v *Vectors) nearestAmong(_ context.Context, q []float32, items []int64, n int) ([]vecHit, error) {
	idx := v.idx.Load()
	if idx == nil {
		return nil, nil
	}
	return idx.among(q, items, candidates(n, len(items))), nil
}

// embedQuery embeds a query; the built-in embedder weighs words by their
// rarity in the store (weight) and adds the wide vector for re-ranking.
func (v *Vectors) embedQuery(ctx context.Context, text string, weight func(string) float64) (chunkVec, error) {
	if b, ok := v.emb.(*embedder.Builtin); ok {
		n, w := b.Dual(text, weight)
		if n == nil {
			return chunkVec{}, embedder.ErrEmpty
		}
		return chunkVec{narrow: n, wide: w}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	vecs, err := v.emb.Embed(ctx, []string{text})
	if err != nil {
		return chunkVec{}, err
	}
	return chunkVec{narrow: vecs[0]}, nil
}

// rerank scores the given items by their stored chunk vectors (best
// chunk): the wide ones when the embedder makes them, else its own, and
// returns the best n.
func (v *Vectors) rerank(ctx context.Context, qv chunkVec, ids []int64, n int) ([]vecHit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	q := qv.narrow
	if qv.wide != nil {
		q = qv.wide
	}
	best := map[int64]float32{}
	// RawBytes: the blob is read in place, not copied.
	var blob sql.RawBytes
	err := store.Each(ctx, v.db, func(r store.Scanner) error {
		var id int64
		if err := r.Scan(&id, &blob); err != nil {
			return err
		}
		if s, ok := dotChunk(q, blob); ok {
			if old, seen := best[id]; !seen || s > old {
				best[id] = s
			}
		}
		return nil
	}, `SELECT item_id, vector FROM chunk_vectors WHERE item_id IN (`+store.Placeholders(len(ids))+`)`, store.Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("vectors: re-rank: %w", err)
	}
	return topHits(best, n), nil
}

func topHits(best map[int64]float32, n int) []vecHit {
	out := make([]vecHit, 0, len(best))
	for id, s := range best {
		out = append(out, vecHit{id, s})
	}
	sortVecHits(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}
