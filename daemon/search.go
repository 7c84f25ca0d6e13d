package daemon

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/search"
)

// Health component names of search.
const (
	searchHealth  = "search"
	vectorsHealth = "vectors"
)

// openSearch builds the embedder and the vector index, serves hybrid
// search on the API and supervises the vector loader/indexer. Search
// answers at once: with keywords only until the index has loaded.
func (a *App) openSearch(_ context.Context, b *api.Backends) error {
	emb, err := newEmbedder(a.cfg)
	if err != nil {
		return err
	}
	s := &searcher{loc: a.cfg.Location}
	s.vec = search.NewVectors(a.store, emb, search.VectorOptions{
		Log:    a.log.With("component", vectorsHealth),
		Status: func(st search.VectorStatus) { reportVectors(a.health, st) },
	})
	a.vectors = s.vec
	s.search = search.New(a.store, s.vec, a.log.With("component", searchHealth))
	reportVectors(a.health, s.vec.Status())
	a.components = append(a.components, supervise.Component{Name: vectorsHealth, Run: func(ctx context.Context) error {
		s.running.Store(true)
		return s.vec.Run(ctx)
	}})
	b.Search = s
	a.health.Success(searchHealth)
	return nil
}

// newEmbedder picks the configured embedder; the built-in one needs nothing.
func newEmbedder(cfg *config.Config) (embedder.Embedder, error) {
	opts := embedder.RemoteOptions{BaseURL: cfg.Embedder.BaseURL, Model: cfg.Embedder.Model, APIKey: cfg.Embedder.APIKey.Reveal()}
	switch cfg.Embedder.Provider {
	case "", "builtin":
		return embedder.NewBuiltin(0), nil
	case "openai":
		return embedder.NewOpenAI(opts)
	case "ollama":
		return embedder.NewOllama(opts)
	default:
		return nil, fmt.Errorf("embedder.provider %q: want builtin, openai or ollama", cfg.Embedder.Provider)
	}
}

// reportVectors turns the index's state into the health model.
func reportVectors(reg *health.Registry, st search.VectorStatus) {
	switch st.State {
	case search.VectorsLoading:
		reg.Set(vectorsHealth, health.Starting, "vectors loading: keyword search only until then")
	case search.VectorsReindexing:
		reg.Set(vectorsHealth, health.Degraded, fmt.Sprintf("re-embedding after an embedder change (%d items to go); search uses keywords for those", st.Pending))
	case search.VectorsFailing:
		reg.Degrade(vectorsHealth, st.LastError)
		reg.Set(vectorsHealth, health.Degraded, fmt.Sprintf("embedder %s failing: %d items wait for vectors (keyword search finds them meanwhile)", st.Embedder, st.Pending))
	default:
		reg.Success(vectorsHealth)
		if st.Pending > 0 {
			reg.Set(vectorsHealth, health.OK, fmt.Sprintf("%d vectors, %d items being embedded", st.Vectors, st.Pending))
		} else {
			reg.Set(vectorsHealth, health.OK, fmt.Sprintf("%d vectors", st.Vectors))
		}
	}
}

// searcher serves api.Searcher: hybrid search in the owner's timezone.
type searcher struct {
	search  *search.Searcher
	vec     *search.Vectors
	loc     *time.Location
	running atomic.Bool // the daemon's loader runs
	once    sync.Once
}

// syncTimeout bounds how long a one-shot CLI search (no daemon) spends
// bringing the index up to date before answering.
const syncTimeout = 30 * time.Second

func (s *searcher) Search(ctx context.Context, q search.Query) ([]search.Hit, error) {
	if q.Location == nil {
		q.Location = s.loc
	}
	if !s.running.Load() {
		// No daemon loop in this process (a CLI command answering
		// in-process): load and index now, once. A failing embedder leaves
		// keyword search working.
		s.once.Do(func() {
			ctx, cancel := context.WithTimeout(ctx, syncTimeout)
			defer cancel()
			s.vec.Sync(ctx)
		})
	}
	return s.search.Search(ctx, q)
}
