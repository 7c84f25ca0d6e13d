package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	chromem "github.com/philippgille/chromem-go"
)

// vecIndex is the in-memory index: one vector per item (the mean of its
// chunks', see itemVector) in chromem-go collections, one per partition.
// It only finds candidates: their chunks are re-ranked from SQLite
// (rerank), so it holds what finding them needs and no more. A small index
// is one partition searched exhaustively. A large one is split around
// k-means centroids (an inverted-file index): a query scans the partitions
// whose centroids are nearest, since chromem's exhaustive scan of 100k
// vectors alone takes longer than a search may.
type vecIndex struct {
	mu    sync.RWMutex // guards parts' membership and items (chromem guards its own maps)
	parts []*vecPart
	// items holds each item's vector (the slice chromem holds, not a
	// copy), so a filtered search scores exactly the items it selects.
	items map[int64][]float32
	// mean is the mean of the vectors the partitions were built from.
	// Text vectors share a large common direction (the frequent words);
	// partitions and routing work on what differs from it, or most mail
	// lands in a few huge central partitions.
	mean    []float32
	probe   int
	builtAt int // vectors when the partitions were built
}

// affinity ranks partitions for a vector: its similarity to the centroid
// once the common direction is taken out.
func (p *vecPart) affinity(v []float32) float32 { return dot32(p.centroid, v) - p.bias }

type vecPart struct {
	centroid []float32 // nil for the single partition of a small index
	bias     float32   // the centroid's dot product with the index's mean
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

// buildIndex builds an index over the given items' unit vectors.
func buildIndex(ctx context.Context, ids []int64, vecs [][]float32, partSize, probe int) (*vecIndex, error) {
	idx := &vecIndex{probe: probe, builtAt: len(ids), items: make(map[int64][]float32, len(ids))}
	if len(ids) <= 2*partSize {
		p, err := newPart(nil)
		if err != nil {
			return nil, err
		}
		idx.parts = []*vecPart{p}
	} else {
		cents, mean := kmeans(vecs, len(ids)/partSize, 8)
		idx.mean = mean
		for _, c := range cents {
			p, err := newPart(c)
			if err != nil {
				return nil, err
			}
			p.bias = dot32(c, mean)
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

// add puts an item's vector in the partition with the nearest centroid,
// replacing the one it had.
func (x *vecIndex) add(ctx context.Context, item int64, vec []float32) error {
	id := strconv.FormatInt(item, 10)
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.parts[0]
	if len(x.parts) > 1 {
		best := float32(math.Inf(-1))
		for _, q := range x.parts {
			if s := q.affinity(vec); s > best {
				best, p = s, q
			}
		}
	}
	if _, had := x.items[item]; had {
		x.removeLocked(ctx, item, id) // it may belong in another partition now
	}
	if err := p.coll.AddDocument(ctx, chromem.Document{ID: id, Embedding: vec}); err != nil {
		return fmt.Errorf("vectors: index %s: %w", id, err)
	}
	x.items[item] = vec
	return nil
}

// remove drops an item.
func (x *vecIndex) remove(ctx context.Context, item int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, had := x.items[item]; had {
		x.removeLocked(ctx, item, strconv.FormatInt(item, 10))
	}
}

func (x *vecIndex) removeLocked(ctx context.Context, item int64, id string) {
	for _, p := range x.parts {
		p.coll.Delete(ctx, nil, nil, id)
	}
	delete(x.items, item)
}

// among returns up to n of the given items nearest to q, best first.
func (x *vecIndex) among(q []float32, items []int64, n int) []vecHit {
	x.mu.RLock()
	hits := make([]vecHit, 0, min(len(items), 1024))
	for _, it := range items {
		vec, ok := x.items[it]
		if !ok {
			continue // not embedded yet
		}
		hits = append(hits, vecHit{it, dot32(q, vec)})
	}
	x.mu.RUnlock()
	sortVecHits(hits)
	return hits[:min(n, len(hits))]
}

// query returns up to n nearest items, best first. A partitioned index
// scans the partitions nearest to q until it has seen probe partitions'
// worth of vectors (at least probe partitions' centroids' worth of mail).
func (x *vecIndex) query(ctx context.Context, q []float32, n int) ([]vecHit, error) {
	x.mu.RLock()
	parts := x.parts
	x.mu.RUnlock()
	if len(parts) > 1 {
		ranked := slices.Clone(parts)
		aff := make(map[*vecPart]float32, len(ranked))
		total := 0
		for _, p := range ranked {
			aff[p] = p.affinity(q)
			total += p.coll.Count()
		}
		slices.SortFunc(ranked, func(a, b *vecPart) int { return cmp.Compare(aff[b], aff[a]) })
		budget := x.probe * total / len(ranked)
		end, seen := 0, 0
		for end < len(ranked) && (end < x.probe || seen < budget) {
			seen += ranked[end].coll.Count()
			end++
		}
		parts = ranked[:end]
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
	hits := make([]vecHit, 0, len(out))
	for _, r := range out {
		item, err := strconv.ParseInt(r.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("vectors: bad document id %q", r.ID)
		}
		hits = append(hits, vecHit{item, r.Similarity})
	}
	sortVecHits(hits)
	return hits[:min(n, len(hits))], nil
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

// kmeans returns k unit centroids and the mean of unit vectors: spherical
// k-means over a sample with the mean taken out, seeded by k-means++ from
// a fixed seed so rebuilds are reproducible.
func kmeans(vecs [][]float32, k, iters int) ([][]float32, []float32) {
	k = max(k, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	sample := vecs
	if len(sample) > 100*k {
		sample = make([][]float32, 100*k)
		for i := range sample {
			sample[i] = vecs[rng.IntN(len(vecs))]
		}
	}
	dim := len(vecs[0])
	mean := make([]float32, dim)
	for _, v := range sample {
		for j, x := range v {
			mean[j] += x
		}
	}
	for j := range mean {
		mean[j] /= float32(len(sample))
	}
	centred := make([][]float32, 0, len(sample))
	for _, v := range sample {
		c := make([]float32, dim)
		for j := range c {
			c[j] = v[j] - mean[j]
		}
		if normalize32(c) {
			centred = append(centred, c)
		}
	}
	if len(centred) == 0 {
		return [][]float32{slices.Clone(vecs[0])}, mean
	}
	// k-means++: each next seed far from those chosen.
	cents := [][]float32{slices.Clone(centred[rng.IntN(len(centred))])}
	dist := make([]float64, len(centred))
	for len(cents) < k {
		var sum float64
		for i, v := range centred {
			d := 1 - float64(dot32(cents[len(cents)-1], v))
			if len(cents) == 1 || d < dist[i] {
				dist[i] = d
			}
			sum += max(dist[i], 0)
		}
		r, i := rng.Float64()*sum, 0
		for ; i < len(centred)-1 && r > max(dist[i], 0); i++ {
			r -= max(dist[i], 0)
		}
		cents = append(cents, slices.Clone(centred[i]))
	}
	assign := make([]int, len(centred))
	for range iters {
		for i, v := range centred {
			best, bs := 0, float32(math.Inf(-1))
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
		for i, v := range centred {
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
				cents[c] = slices.Clone(centred[rng.IntN(len(centred))])
			}
		}
	}
	return cents, mean
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
