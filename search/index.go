package search

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// vecIndex is the in-memory index: one vector per item (the normalised
// sum of its chunks', see itemVector), quantised to int8 with one scale
// per item, stored dimension by dimension. A query scores every item
// exactly, reading only the dimensions in which it is not zero: the
// built-in embedder gives a query one dimension per word, so a search of
// three words reads three bytes of each item. It only finds candidates:
// their chunks are re-ranked from SQLite (rerank).
//
// A slot holds one item; a removed item's slot is reused.
type vecIndex struct {
	mu    sync.RWMutex
	dim   int
	cols  [][]int8  // cols[d][slot]: dimension d of every slot
	scale []float32 // per slot: the step of its int8 values; 0 for a free slot
	items []int64   // per slot: the item, 0 for a free slot
	free  []int32
	// Each item's slot: by id in dense (slot+1, 0 for none), as the
	// store's ids are nearly consecutive, 4 bytes an id where a map took
	// about 40 an item (40 MB at a million); an id far beyond the others
	// in sparse.
	dense  []int32
	sparse map[int64]int32
	n      int // items held
}

func newVecIndex(dim, capacity int) *vecIndex {
	x := &vecIndex{dim: dim, cols: make([][]int8, dim), dense: make([]int32, 0, capacity+1)}
	for d := range x.cols {
		x.cols[d] = make([]int8, 0, capacity)
	}
	x.scale = make([]float32, 0, capacity)
	x.items = make([]int64, 0, capacity)
	return x
}

// size is the number of items held.
func (x *vecIndex) size() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n
}

// slotOf returns the item's slot.
func (x *vecIndex) slotOf(item int64) (int32, bool) {
	if item >= 0 && item < int64(len(x.dense)) {
		s := x.dense[item]
		return s - 1, s > 0
	}
	s, ok := x.sparse[item]
	return s, ok
}

// setSlot records the item's slot.
func (x *vecIndex) setSlot(item int64, slot int32) {
	if item >= int64(len(x.dense)) && item >= 0 && item < int64(2*len(x.items))+1<<20 {
		x.dense = append(x.dense, make([]int32, item+1-int64(len(x.dense)))...)
		for id, s := range x.sparse { // now within dense
			if id < int64(len(x.dense)) {
				x.dense[id] = s + 1
				delete(x.sparse, id)
			}
		}
	}
	if item >= 0 && item < int64(len(x.dense)) {
		x.dense[item] = slot + 1
		return
	}
	if x.sparse == nil {
		x.sparse = map[int64]int32{}
	}
	x.sparse[item] = slot
}

// dropSlot forgets the item's slot.
func (x *vecIndex) dropSlot(item int64) {
	if item >= 0 && item < int64(len(x.dense)) {
		x.dense[item] = 0
		return
	}
	delete(x.sparse, item)
}

// add puts an item's vector (stored form: see encodeInt8) in the index,
// replacing the one it had.
func (x *vecIndex) add(item int64, enc []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(enc) < 4 {
		return fmt.Errorf("vectors: item %d has a vector of %d bytes", item, len(enc))
	}
	if len(enc) != 4+x.dim {
		if len(x.items) > 0 {
			return fmt.Errorf("vectors: item %d has a vector of %d bytes, the index holds %d dimensions", item, len(enc), x.dim)
		}
		// An empty index takes the dimension of its first vector (a
		// remote embedder's is known after its first answer).
		x.dim, x.cols = len(enc)-4, make([][]int8, len(enc)-4)
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(enc))
	slot, ok := x.slotOf(item)
	switch {
	case ok:
	case len(x.free) > 0:
		slot = x.free[len(x.free)-1]
		x.free = x.free[:len(x.free)-1]
	default:
		slot = int32(len(x.items))
		for d := range x.cols {
			x.cols[d] = append(x.cols[d], 0)
		}
		x.scale = append(x.scale, 0)
		x.items = append(x.items, 0)
	}
	for d, c := range x.cols {
		c[slot] = int8(enc[4+d])
	}
	x.scale[slot], x.items[slot] = scale, item
	if !ok {
		x.setSlot(item, slot)
		x.n++
	}
	return nil
}

// remove drops an item.
func (x *vecIndex) remove(item int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	slot, ok := x.slotOf(item)
	if !ok {
		return
	}
	x.dropSlot(item)
	x.n--
	for _, c := range x.cols {
		c[slot] = 0
	}
	x.scale[slot], x.items[slot] = 0, 0
	x.free = append(x.free, slot)
}

// term is one dimension a query uses.
type term struct {
	dim int
	w   float32
}

// terms lists the dimensions in which q is not zero; nil if q does not
// fit the index.
func (x *vecIndex) terms(q []float32) []term {
	if len(q) != x.dim {
		return nil
	}
	var out []term
	for d, w := range q {
		if w != 0 {
			out = append(out, term{d, w})
		}
	}
	return out
}

// among returns up to n of the given items nearest to q, best first.
func (x *vecIndex) among(q []float32, items []int64, n int) []vecHit {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.amongLocked(q, items, n)
}

func (x *vecIndex) amongLocked(q []float32, items []int64, n int) []vecHit {
	ts := x.terms(q)
	hits := make([]vecHit, 0, min(len(items), 1024))
	for _, it := range items {
		slot, ok := x.slotOf(it)
		if !ok {
			continue // not embedded yet
		}
		var s float32
		for _, t := range ts {
			s += t.w * float32(x.cols[t.dim][slot])
		}
		hits = append(hits, vecHit{it, s * x.scale[slot]})
	}
	sortVecHits(hits)
	return hits[:min(n, len(hits))]
}

// parallelSlots is the size from which a query's scan is split across
// the CPUs.
const parallelSlots = 1 << 16

// query returns up to n items nearest to q, best first: those that share
// something with it, or every item when n covers them all (the re-ranking
// then sees what the narrow vectors miss, a misspelt word).
func (x *vecIndex) query(q []float32, n int) []vecHit {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n >= x.n {
		items := make([]int64, 0, x.n)
		for _, it := range x.items {
			if it != 0 {
				items = append(items, it)
			}
		}
		return x.amongLocked(q, items, n)
	}
	ts := x.terms(q)
	slots := len(x.items)
	if len(ts) == 0 || slots == 0 || n <= 0 {
		return nil
	}
	parts := 1
	if slots >= parallelSlots {
		parts = runtime.GOMAXPROCS(0)
	}
	found := make([][]vecHit, parts)
	var wg sync.WaitGroup
	for p := range parts {
		from, to := p*slots/parts, (p+1)*slots/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[p] = x.scan(ts, from, to, n)
		}()
	}
	wg.Wait()
	var hits []vecHit
	for _, f := range found {
		hits = append(hits, f...)
	}
	sortVecHits(hits)
	return hits[:min(n, len(hits))]
}

// scanBlock is how many slots a scan scores at once: their running
// scores stay in the CPU's first-level cache while each dimension adds
// to them, where scores for every slot (4 MB at a million items) went
// through memory once per dimension of the query.
const scanBlock = 2048

// scan scores the slots [first, last) and returns the best n.
func (x *vecIndex) scan(ts []term, first, last, n int) []vecHit {
	var buf [scanBlock]float32
	top := make(vecHeap, 0, n)
	var floor float32 // what a slot must beat to be kept
	for from := first; from < last; from += scanBlock {
		to := min(last, from+scanBlock)
		s := buf[:to-from]
		// The first dimension sets the scores, the others add to them.
		// (Slices of one length: the compiler drops the bounds checks.)
		col, w := x.cols[ts[0].dim][from:to], ts[0].w
		col = col[:len(s)]
		for i, v := range col {
			s[i] = w * float32(v)
		}
		for _, t := range ts[1:] {
			col, w := x.cols[t.dim][from:to], t.w
			col = col[:len(s)]
			for i, v := range col {
				s[i] += w * float32(v)
			}
		}
		scale := x.scale[from:to]
		scale = scale[:len(s)]
		for i, v := range s {
			// One comparison a slot, nearly always false once the
			// heap is full: a slot needs more than nothing in common
			// (free slots have scale 0) and more than the worst kept.
			sim := v * scale[i]
			if sim <= floor {
				continue
			}
			h := vecHit{x.items[from+i], sim}
			if len(top) < n {
				heap.Push(&top, h)
			} else {
				top[0] = h
				heap.Fix(&top, 0)
			}
			if len(top) == n {
				floor = top[0].sim
			}
		}
	}
	return top
}

// vecHeap is a min-heap of hits by similarity: the worst of the best n on top.
type vecHeap []vecHit

func (h vecHeap) Len() int { return len(h) }
func (h vecHeap) Less(i, j int) bool {
	if h[i].sim != h[j].sim {
		return h[i].sim < h[j].sim
	}
	return h[i].item > h[j].item
}
func (h vecHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *vecHeap) Push(v any)   { *h = append(*h, v.(vecHit)) }
func (h *vecHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

func sortVecHits(h []vecHit) {
	slices.SortFunc(h, func(a, b vecHit) int {
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return cmp.Compare(a.item, b.item)
	})
}

// has reports whether the item has a vector in the index.
func (x *vecIndex) has(item int64) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.slotOf(item)
	return ok
}
