package search

import (
	"bufio"
	"cmp"
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/store"
)

// BenchmarkSearchHome runs the shared bench's searches in process on a
// populated database, for profiles of what the daemon does per query:
// OMNIBRAIN_BENCH_DB is the omnibrain.db of a copy of a home (it is opened
// for writing: never point it at a home in use), OMNIBRAIN_BENCH_QUERIES a
// file of queries, one a line (the bench's generator, 2-4 vocabulary
// words). One searcher serves every query, as in the daemon.
func BenchmarkSearchHome(b *testing.B) {
	path, qfile := os.Getenv("OMNIBRAIN_BENCH_DB"), os.Getenv("OMNIBRAIN_BENCH_QUERIES")
	if path == "" || qfile == "" {
		b.Skip("set OMNIBRAIN_BENCH_DB (a copy of a populated home's database) and OMNIBRAIN_BENCH_QUERIES")
	}
	queries := readLines(b, qfile)
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Load(ctx); err != nil {
		b.Fatal(err)
	}
	s := New(st, vec, nil)
	// One pass first: the page cache and the term counts warm, as in a
	// daemon that has served searches for a while. Its CPU is what the
	// shared bench's searches cost right after an import.
	coldCPU := cpuTime()
	for _, q := range queries {
		if _, err := s.Search(ctx, Query{Text: q, Limit: 10, Fallback: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("first pass: %.1f ms CPU a search", float64((cpuTime()-coldCPU).Microseconds())/1000/float64(len(queries)))
	var lat, cpu []time.Duration
	worst := map[string]time.Duration{} // the most CPU a query took
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := queries[i%len(queries)]
		start, startCPU := time.Now(), cpuTime()
		_, err := s.Search(ctx, Query{Text: q, Limit: 10, Fallback: true}) // as the API asks
		lat, cpu = append(lat, time.Since(start)), append(cpu, cpuTime()-startCPU)
		if err != nil {
			b.Fatal(err)
		}
		worst[q] = max(worst[q], cpu[len(cpu)-1])
	}
	byCPU := slices.Collect(maps.Keys(worst))
	slices.SortFunc(byCPU, func(a, b string) int { return cmp.Compare(worst[b], worst[a]) })
	for _, q := range byCPU[:min(10, len(byCPU))] {
		b.Logf("%6.1f ms CPU  %s", float64(worst[q].Microseconds())/1000, q)
	}
	reportLatency(b, lat, cpu)
}

func readLines(b *testing.B, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}
