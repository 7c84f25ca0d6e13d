package search

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/omnibrain/omnibrain/embedder"
)

// The index scores exactly what the stored int8 vectors say, whatever
// slots were freed and reused, and an empty index takes the dimension of
// its first vector.
func TestVecIndexMatchesAnExactScan(t *testing.T) {
	for _, size := range []int{3000, parallelSlots + 1000} {
		t.Run(strconv.Itoa(size), func(t *testing.T) { testVecIndex(t, size) })
	}
}

func testVecIndex(t *testing.T, size int) {
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(dim int) []float32 {
		v := make([]float32, dim)
		for i := range v {
			if rng.IntN(4) == 0 {
				v[i] = float32(rng.NormFloat64())
			}
		}
		v[rng.IntN(dim)] = 1
		embedder.Normalize(v)
		return v
	}
	x := newVecIndex(0, 0)
	stored := map[int64][]byte{}
	for id := int64(1); id <= int64(size); id++ {
		enc := encodeInt8(vec(32))
		if err := x.add(id, enc); err != nil {
			t.Fatal(err)
		}
		stored[id] = enc
	}
	for id := int64(1); id <= int64(size); id += 3 {
		x.remove(id)
		delete(stored, id)
	}
	for id := int64(size + 1); id <= int64(size+500); id++ { // reuses the freed slots
		enc := encodeInt8(vec(32))
		if err := x.add(id, enc); err != nil {
			t.Fatal(err)
		}
		stored[id] = enc
	}
	// Ids far beyond the others are held apart from the consecutive ones.
	for _, id := range []int64{1 << 40, 1<<40 + 7, 1<<40 + 9} {
		enc := encodeInt8(vec(32))
		if err := x.add(id, enc); err != nil {
			t.Fatal(err)
		}
		stored[id] = enc
	}
	x.remove(1<<40 + 7)
	delete(stored, 1<<40+7)
	if !x.has(1<<40) || x.has(1<<40+7) || x.has(1<<40+8) {
		t.Fatal("far ids: has disagrees with what was added and removed")
	}
	if err := x.add(1, make([]byte, 4+16)); err == nil {
		t.Fatal("a vector of another dimension was accepted")
	}
	if x.size() != len(stored) || len(x.items) != size {
		t.Fatalf("size %d with %d slots, want %d items in %d slots", x.size(), len(x.items), len(stored), size)
	}
	for range 20 {
		q := make([]float32, 32)
		for range 3 {
			q[rng.IntN(32)] = float32(rng.Float64())
		}
		var want []vecHit
		for id, enc := range stored {
			if s, _ := dotInt8(q, enc); s > 0 {
				want = append(want, vecHit{id, s})
			}
		}
		sortVecHits(want)
		got := x.query(q, 50)
		if len(got) != min(50, len(want)) {
			t.Fatalf("%d hits, want %d", len(got), min(50, len(want)))
		}
		for i := range got {
			if got[i].item != want[i].item || abs32(got[i].sim-want[i].sim) > 1e-4 {
				t.Fatalf("hit %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkVecIndexQuery measures a query's scan of the index at a million
// items, with the three or four dimensions a query of as many words has.
func BenchmarkVecIndexQuery(b *testing.B) {
	const size, dim = 1_000_000, 128
	rng := rand.New(rand.NewPCG(3, 4))
	x := newVecIndex(dim, size)
	enc := make([]byte, 4+dim)
	for id := int64(1); id <= size; id++ {
		binary.LittleEndian.PutUint32(enc, math.Float32bits(1.0/127/8))
		for d := range dim {
			enc[4+d] = byte(int8(rng.IntN(255) - 127))
		}
		if err := x.add(id, enc); err != nil {
			b.Fatal(err)
		}
	}
	q := make([]float32, dim)
	for i := 0; b.Loop(); i++ {
		clear(q)
		for range 3 + i%2 {
			q[rng.IntN(dim)] = 0.5
		}
		if hits := x.query(q, 200); len(hits) != 200 {
			b.Fatalf("%d hits", len(hits))
		}
	}
}
