package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	chromem "github.com/philippgille/chromem-go"
)

// vecIndex is the in-memory index: chromem-go collections, one per
// partition. A small index is one partition searched exhaustively. A large
// one is split around k-means centroids (an inverted-file index): a query
// scans the partitions whose centroids are nearest, since chromem's
// exhaustive scan of 100k vectors alone takes longer than a search may.
type vecIndex struct {
	mu      sync.RWMutex // guards parts' membership (chromem guards its own maps)
	parts   []*vecPart
	probe   int
	builtAt int // vectors when the partitions were built
}

type vecPart struct {
	centroid []float32 // nil for the single partition of a small index
	coll     *chromem.Collection
}

func newPart(centroid []float32) (*vecPart, error) {
	// An in-memory DB per partition: chromem's persistence is not used,
	// SQLite holds the vectors.
	coll, err := chromem.NewDB().CreateCollection("items", nil, nil)
	if err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	return &vecPart{centroid: centroid, coll: coll}, nil
}

// buildIndex builds an index over the given chunk ids and unit vectors.
func buildIndex(ctx context.Context, ids []string, vecs [][]float32, partSize, probe int) (*vecIndex, error) {
	idx := &vecIndex{probe: probe, builtAt: len(ids)}
	if len(ids) <= 2*partSize {
		p, err := newPart(nil)
		if err != nil {
			return nil, err
		}
		idx.parts = []*vecPart{p}
	} else {
		for _, c := range kmeans(vecs, len(ids)/partSize, 6) {
			p, err := newPart(c)
			if err != nil {
				return nil, err
			}
			idx.parts = append(idx.parts, p)
		}
	}
	for i, id := range ids {
		if err := idx.add(ctx, id, vecs[i]); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

func (x *vecIndex) size() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := 0
	for _, p := range x.parts {
		n += p.coll.Count()
	}
	return n
}

// add puts a chunk's vector in the partition with the nearest centroid.
func (x *vecIndex) add(ctx context.Context, id string, vec []float32) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.parts[0]
	if len(x.parts) > 1 {
		best := float32(-2)
		for _, q := range x.parts {
			if s := dot32(q.centroid, vec); s > best {
				best, p = s, q
			}
		}
	}
	if err := p.coll.AddDocument(ctx, chromem.Document{ID: id, Embedding: vec}); err != nil {
		return fmt.Errorf("vectors: index %s: %w", id, err)
	}
	return nil
}

// remove drops every chunk of an item.
func (x *vecIndex) remove(ctx context.Context, item int64, maxChunks int) {
	ids := make([]string, maxChunks)
	for i := range ids {
		ids[i] = docID(item, int64(i))
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, p := range x.parts {
		p.coll.Delete(ctx, nil, nil, ids...)
	}
}

// query returns up to n nearest chunks, best first.
func (x *vecIndex) query(ctx context.Context, q []float32, n int) ([]chromem.Result, error) {
	x.mu.RLock()
	parts := x.parts
	x.mu.RUnlock()
	if len(parts) > 1 {
		ranked := slices.Clone(parts)
		slices.SortFunc(ranked, func(a, b *vecPart) int { return cmp.Compare(dot32(q, b.centroid), dot32(q, a.centroid)) })
		parts = ranked[:min(x.probe, len(ranked))]
	}
	var out []chromem.Result
	for _, p := range parts {
		k := min(n, p.coll.Count()) // chromem refuses n > Count()
		if k == 0 {
			continue
		}
		res, err := p.coll.QueryEmbedding(ctx, q, k, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("vectors: query: %w", err)
		}
		out = append(out, res...)
	}
	slices.SortFunc(out, func(a, b chromem.Result) int { return cmp.Compare(b.Similarity, a.Similarity) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func dot32(a, b []float32) float32 {
	if len(a) != len(b) {
		return -2
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// kmeans returns k unit centroids of unit vectors (spherical k-means over
// a sample, seeded deterministically so rebuilds are reproducible).
func kmeans(vecs [][]float32, k, iters int) [][]float32 {
	if k < 1 {
		k = 1
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sample := vecs
	if len(sample) > 50*k {
		sample = make([][]float32, 50*k)
		for i := range sample {
			sample[i] = vecs[rng.IntN(len(vecs))]
		}
	}
	dim := len(vecs[0])
	cents := make([][]float32, k)
	for i := range cents {
		cents[i] = slices.Clone(sample[rng.IntN(len(sample))])
	}
	assign := make([]int, len(sample))
	for it := 0; it < iters; it++ {
		for i, v := range sample {
			best, bs := 0, float32(-2)
			for c, cv := range cents {
				if s := dot32(cv, v); s > bs {
					best, bs = c, s
				}
			}
			assign[i] = best
		}
		sums := make([][]float32, k)
		for c := range sums {
			sums[c] = make([]float32, dim)
		}
		for i, v := range sample {
			s := sums[assign[i]]
			for j := range v {
				s[j] += v[j]
			}
		}
		for c := range cents {
			if normalize32(sums[c]) {
				cents[c] = sums[c]
			} else {
				// An empty cluster restarts at a random sample point.
				cents[c] = slices.Clone(sample[rng.IntN(len(sample))])
			}
		}
	}
	return cents
}

func normalize32(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return false
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return true
}
