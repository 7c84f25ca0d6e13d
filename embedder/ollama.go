package embedder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/omnibrain/omnibrain/internal/retry"
)

// Ollama embeds through a local Ollama server (POST {base}/api/embed).
type Ollama struct {
	opts RemoteOptions
	dim  atomic.Int64
	// retryBase is the first backoff wait; tests shorten it.
	retryBase time.Duration
}

// NewOllama returns an Ollama embedder; the base URL defaults to
// http://127.0.0.1:11434 and the model to nomic-embed-text.
func NewOllama(opts RemoteOptions) (*Ollama, error) {
	opts.defaults()
	if opts.BaseURL == "" {
		opts.BaseURL = "http://127.0.0.1:11434"
	}
	if opts.Model == "" {
		opts.Model = "nomic-embed-text"
	}
	return &Ollama{opts: opts, retryBase: 500 * time.Millisecond}, nil
}

// Dimension implements Embedder: known after the first answer.
func (o *Ollama) Dimension() int { return int(o.dim.Load()) }

// Identity implements Embedder.
func (o *Ollama) Identity() string { return "ollama/" + o.opts.Model + "@" + o.opts.BaseURL }

type ollamaRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type ollamaResponse struct {
	Model      string      `json:"model"`
	Embeddings [][]float32 `json:"embeddings"`
	Error      string      `json:"error"`
}

// Embed implements Embedder, retrying rate limits and server errors.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("ollama embed: text %d: %w", i, ErrEmpty)
		}
	}
	body, err := json.Marshal(ollamaRequest{Model: o.opts.Model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("ollama embed: %w", err)
	}
	bo := retry.Policy{Initial: o.retryBase, Max: time.Minute, Jitter: 0.5}.Backoff()
	vecs, err := backoff.Retry(ctx, func() ([][]float32, error) {
		return o.post(ctx, body, len(texts))
	}, backoff.WithBackOff(bo), backoff.WithMaxTries(uint(o.opts.MaxRetries)+1), backoff.WithMaxElapsedTime(0))
	if err != nil {
		return nil, err
	}
	o.dim.Store(int64(len(vecs[0])))
	return vecs, nil
}

func (o *Ollama) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.opts.BaseURL+"/api/embed", bytes.NewReader(body))
	if err != nil {
		return nil, backoff.Permanent(fmt.Errorf("ollama embed: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ollama embed: %w", err) // network: retried
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("ollama embed: read answer: %w", err)
	}
	var out ollamaResponse
	jsonErr := json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusOK {
		msg := out.Error
		if jsonErr != nil || msg == "" {
			msg = strings.TrimSpace(string(raw))
		}
		rerr := &RemoteError{Service: "ollama embed", Status: resp.StatusCode, Message: msg}
		if !rerr.Temporary() {
			return nil, backoff.Permanent(rerr)
		}
		if d, ok := retry.After(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
			// Both: Retry waits d, and the last attempt's error says why.
			return nil, fmt.Errorf("%w: %w", rerr, &backoff.RetryAfterError{Duration: d})
		}
		return nil, rerr
	}
	if jsonErr != nil {
		return nil, backoff.Permanent(fmt.Errorf("ollama embed: bad answer: %w", jsonErr))
	}
	if out.Error != "" {
		return nil, backoff.Permanent(errors.New("ollama embed: " + out.Error))
	}
	if err := checkVectors("ollama embed", out.Embeddings, n); err != nil {
		return nil, backoff.Permanent(err)
	}
	return out.Embeddings, nil
}
