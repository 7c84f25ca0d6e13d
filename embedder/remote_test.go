package embedder

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeVector is what the fakes answer for a text: deterministic, not unit length.
func fakeVector(text string) []float64 {
	return []float64{float64(len(text)), 1, 2}
}

// openAIFake speaks POST /v1/embeddings as the OpenAI API does; the first
// `fail` requests get the given status with an OpenAI error body.
func openAIFake(t *testing.T, fail int, status int) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "no route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		if int(n) <= fail {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After-Ms", "5")
			w.WriteHeader(status)
			io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		var req struct {
			Model          string   `json:"model"`
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "text-embedding-3-small" || len(req.Input) == 0 {
			t.Errorf("bad request: %+v, %v", req, err)
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []datum
		// Answer in reverse order: clients must place vectors by index.
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, datum{"embedding", i, fakeVector(req.Input[i])})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": 8, "total_tokens": 8},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func checkFakeVectors(t *testing.T, texts []string, vecs [][]float32) {
	t.Helper()
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		want := fakeVector(texts[i])
		norm := float32(0)
		for _, x := range want {
			norm += float32(x * x)
		}
		if len(v) != 3 || v[0] <= v[1] || dot(v, v) < 0.999 || dot(v, v) > 1.001 {
			t.Fatalf("vector %d = %v: not the normalised answer for %q", i, v, texts[i])
		}
	}
}

func TestOpenAIEmbed(t *testing.T) {
	texts := []string{"first text", "a much longer second text"}
	tests := []struct {
		name      string
		key       string
		fail      int
		status    int
		wantErr   bool
		wantCalls int32
		wantTemp  bool
	}{
		{"ok", "sk-test", 0, 0, false, 1, false},
		{"429 then ok", "sk-test", 2, http.StatusTooManyRequests, false, 3, false},
		{"429 forever", "sk-test", 100, http.StatusTooManyRequests, true, 4, true},
		{"500 then ok", "sk-test", 1, http.StatusInternalServerError, false, 2, false},
		{"wrong key", "sk-wrong", 0, 0, true, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := openAIFake(t, tc.fail, tc.status)
			e, err := NewOpenAI(RemoteOptions{BaseURL: srv.URL + "/v1", APIKey: tc.key, Model: "text-embedding-3-small"})
			if err != nil {
				t.Fatal(err)
			}
			vecs, err := e.Embed(context.Background(), texts)
			if calls.Load() != tc.wantCalls {
				t.Errorf("%d requests, want %d", calls.Load(), tc.wantCalls)
			}
			if tc.wantErr {
				var re *RemoteError
				if !errors.As(err, &re) {
					t.Fatalf("err = %v, want a RemoteError", err)
				}
				if re.Temporary() != tc.wantTemp {
					t.Errorf("Temporary() = %v for %v", re.Temporary(), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkFakeVectors(t, texts, vecs)
			if e.Dimension() != 3 {
				t.Errorf("dimension %d, want 3 after the first answer", e.Dimension())
			}
		})
	}
}

func TestOpenAIIdentityNamesModelAndServer(t *testing.T) {
	a, _ := NewOpenAI(RemoteOptions{BaseURL: "http://a/v1", Model: "m1"})
	b, _ := NewOpenAI(RemoteOptions{BaseURL: "http://a/v1", Model: "m2"})
	c, _ := NewOpenAI(RemoteOptions{BaseURL: "http://b/v1/", Model: "m1"})
	if a.Identity() == b.Identity() || a.Identity() == c.Identity() {
		t.Fatalf("identities collide: %q %q %q", a.Identity(), b.Identity(), c.Identity())
	}
}

// ollamaFake speaks POST /api/embed as Ollama does.
func ollamaFake(t *testing.T, answer func(n int32, w http.ResponseWriter, model string, input []string)) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/api/embed" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid request"}`)
			return
		}
		answer(n, w, req.Model, req.Input)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func ollamaOK(w http.ResponseWriter, model string, input []string) {
	var embs [][]float64
	for _, s := range input {
		embs = append(embs, fakeVector(s))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"model": model, "embeddings": embs, "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8})
}

func ollamaError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func TestOllamaEmbed(t *testing.T) {
	texts := []string{"first text", "a much longer second text"}
	tests := []struct {
		name      string
		answer    func(n int32, w http.ResponseWriter, model string, input []string)
		wantErr   string
		wantCalls int32
	}{
		{"ok", func(_ int32, w http.ResponseWriter, m string, in []string) { ollamaOK(w, m, in) }, "", 1},
		{"429 then ok", func(n int32, w http.ResponseWriter, m string, in []string) {
			if n == 1 {
				ollamaError(w, http.StatusTooManyRequests, "server busy, please try again")
				return
			}
			ollamaOK(w, m, in)
		}, "", 2},
		{"Retry-After is waited out", func(n int32, w http.ResponseWriter, m string, in []string) {
			if n == 1 {
				w.Header().Set("Retry-After", "0.01")
				ollamaError(w, http.StatusServiceUnavailable, "loading model")
				return
			}
			ollamaOK(w, m, in)
		}, "", 2},
		{"429 with Retry-After forever keeps the reason", func(_ int32, w http.ResponseWriter, _ string, _ []string) {
			w.Header().Set("Retry-After", "0.01")
			ollamaError(w, http.StatusTooManyRequests, "server busy, please try again")
		}, "HTTP 429: server busy", 3},
		{"500 forever", func(_ int32, w http.ResponseWriter, _ string, _ []string) {
			ollamaError(w, http.StatusInternalServerError, "llama runner process has terminated")
		}, "llama runner process has terminated", 3},
		{"model missing is not retried", func(_ int32, w http.ResponseWriter, m string, _ []string) {
			ollamaError(w, http.StatusNotFound, `model "`+m+`" not found, try pulling it first`)
		}, "not found, try pulling it first", 1},
		{"wrong count", func(_ int32, w http.ResponseWriter, m string, in []string) { ollamaOK(w, m, in[:1]) }, "1 vectors for 2 texts", 1},
		{"garbage", func(_ int32, w http.ResponseWriter, _ string, _ []string) { io.WriteString(w, "<html>") }, "bad answer", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := ollamaFake(t, tc.answer)
			e, err := NewOllama(RemoteOptions{BaseURL: srv.URL, Model: "nomic-embed-text", MaxRetries: 2})
			if err != nil {
				t.Fatal(err)
			}
			e.retryBase = time.Millisecond
			vecs, err := e.Embed(context.Background(), texts)
			if calls.Load() != tc.wantCalls {
				t.Errorf("%d requests, want %d", calls.Load(), tc.wantCalls)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkFakeVectors(t, texts, vecs)
		})
	}
}

func TestOllamaDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	e, _ := NewOllama(RemoteOptions{BaseURL: url, MaxRetries: 1})
	e.retryBase = time.Millisecond
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil {
		t.Fatal("embedding against a closed port succeeded")
	}
	if _, err := e.Embed(context.Background(), []string{"  "}); !errors.Is(err, ErrEmpty) {
		t.Fatalf("blank text: err = %v, want ErrEmpty", err)
	}
}
