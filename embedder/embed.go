// Package embedder turns text into vectors for omnibrain's semantic search: a
// built-in offline embedder (the default) and clients for OpenAI-compatible
// servers and Ollama.
package embedder

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Embedder turns texts into L2-normalised vectors of one dimension.
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimension is the length of every vector; 0 while a remote embedder
	// has not answered yet.
	Dimension() int
	// Identity names the model and everything that changes its vectors.
	// Vectors made under another identity are not comparable and must be
	// recomputed.
	Identity() string
}

// QueryEmbedder is implemented by embedders that weigh query words by how
// rare they are in the corpus. weight returns the inverse document
// frequency of a word as produced by tokenize.Words.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, text string, weight func(word string) float64) ([]float32, error)
}

// ErrEmpty means the text has nothing to embed (only stop words or
// punctuation): callers skip it rather than index a meaningless vector.
var ErrEmpty = errors.New("embed: text has no content to embed")

// Normalize scales v to unit length in place and reports whether it had any
// length at all.
func Normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return true
}

// checkVectors validates what a remote embedder returned.
func checkVectors(who string, vecs [][]float32, want int) error {
	if len(vecs) != want {
		return fmt.Errorf("%s: got %d vectors for %d texts", who, len(vecs), want)
	}
	dim := -1
	for i, v := range vecs {
		if len(v) == 0 {
			return fmt.Errorf("%s: vector %d is empty", who, i)
		}
		if dim >= 0 && len(v) != dim {
			return fmt.Errorf("%s: vectors of different dimensions (%d and %d)", who, dim, len(v))
		}
		dim = len(v)
		if !Normalize(v) {
			return fmt.Errorf("%s: vector %d has no length", who, i)
		}
	}
	return nil
}
