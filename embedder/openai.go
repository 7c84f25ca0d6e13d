package embedder

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// RemoteOptions configure the OpenAI-compatible and Ollama clients.
type RemoteOptions struct {
	BaseURL string // OpenAI: ends in /v1; Ollama: the server root
	Model   string
	APIKey  string // OpenAI only
	// MaxRetries for rate limits (429) and server errors; default 3.
	MaxRetries int
	// Timeout bounds one request; default 60s.
	Timeout    time.Duration
	HTTPClient *http.Client
}

func (o *RemoteOptions) defaults() {
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	o.BaseURL = strings.TrimSuffix(o.BaseURL, "/")
}

// OpenAI embeds through any server that speaks the OpenAI embeddings API
// (POST {base}/embeddings), using the official SDK, which retries 429s and
// 5xx answers with backoff and honours Retry-After.
type OpenAI struct {
	client openai.Client
	model  string
	base   string
	dim    atomic.Int64
}

// NewOpenAI returns an OpenAI-compatible embedder.
func NewOpenAI(opts RemoteOptions) (*OpenAI, error) {
	opts.defaults()
	if opts.BaseURL == "" {
		opts.BaseURL = "https://api.openai.com/v1"
	}
	if opts.Model == "" {
		opts.Model = openai.EmbeddingModelTextEmbedding3Small
	}
	c := openai.NewClient(
		option.WithBaseURL(opts.BaseURL+"/"),
		option.WithAPIKey(opts.APIKey),
		option.WithHTTPClient(opts.HTTPClient),
		option.WithMaxRetries(opts.MaxRetries),
		option.WithRequestTimeout(opts.Timeout),
	)
	return &OpenAI{client: c, model: opts.Model, base: opts.BaseURL}, nil
}

// Dimension implements Embedder: known after the first answer.
func (o *OpenAI) Dimension() int { return int(o.dim.Load()) }

// Identity implements Embedder.
func (o *OpenAI) Identity() string { return "openai/" + o.model + "@" + o.base }

// Embed implements Embedder.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("openai embeddings: text %d: %w", i, ErrEmpty)
		}
	}
	resp, err := o.client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:          o.model,
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return nil, &RemoteError{Service: "openai embeddings", Status: apiErr.StatusCode, Message: apiErr.Message, err: err}
		}
		return nil, fmt.Errorf("openai embeddings: %w", err)
	}
	vecs := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) {
			return nil, fmt.Errorf("openai embeddings: answer has index %d for %d texts", d.Index, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		vecs[d.Index] = v
	}
	if err := checkVectors("openai embeddings", vecs, len(texts)); err != nil {
		return nil, err
	}
	o.dim.Store(int64(len(vecs[0])))
	return vecs, nil
}

// RemoteError is an error answer from an embedding service.
type RemoteError struct {
	Service string
	Status  int
	Message string
	err     error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Service, e.Status, e.Message)
}

func (e *RemoteError) Unwrap() error { return e.err }

// Temporary reports whether trying again later may succeed (rate limits,
// server errors), as opposed to a request the service will never accept.
func (e *RemoteError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500 || e.Status == http.StatusRequestTimeout
}
