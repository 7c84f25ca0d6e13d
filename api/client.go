package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Client talks to the API. The CLI and the tests share it.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewUnixClient returns a client for the daemon's socket.
func NewUnixClient(socketPath string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socketPath)
	}}
	return &Client{base: "http://" + socketHost, hc: &http.Client{Transport: tr}}
}

// NewTCPClient returns a client for the loopback listener (base like
// http://127.0.0.1:7423).
func NewTCPClient(base, token string) *Client {
	return &Client{base: strings.TrimSuffix(base, "/"), token: token, hc: &http.Client{}}
}

// NewInProcessClient serves h on an in-memory listener, for commands run
// while no daemon is up: the CLI goes through the same API either way. The
// returned stop function shuts the server down.
func NewInProcessClient(h http.Handler) (*Client, func()) {
	ln := newMemListener()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.dial(ctx) }}
	c := &Client{base: "http://" + socketHost, hc: &http.Client{Transport: tr}}
	return c, func() {
		tr.CloseIdleConnections()
		srv.Close()
	}
}

// Ping reports whether the API answers at the client's address.
func (c *Client) Ping(ctx context.Context) error {
	var ok struct{ OK bool }
	err := c.do(ctx, http.MethodGet, "/api/v1/ping", nil, &ok)
	if e, isAPI := errors.AsType[*Error](err); isAPI && e.Status == http.StatusNotFound && e.Code == "not_found" {
		return nil // a daemon from before ping answers with our API's 404
	}
	return err
}

// Error is an API error answer.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is lets errors.Is(err, ErrNotFound) and errors.Is(err, ErrConflict) work on the client side.
func (e *Error) Is(target error) bool {
	return (target == ErrNotFound && e.Status == http.StatusNotFound) ||
		(target == ErrConflict && e.Status == http.StatusConflict)
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// send performs a request and returns the response if its status is 2xx.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Message == "" {
		return &Error{Status: resp.StatusCode, Code: "http", Message: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	return &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
}

// do sends a JSON request and decodes a JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("api: decode %s: %w", path, err)
	}
	return nil
}

// Status returns the daemon's status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st Status
	return &st, c.do(ctx, http.MethodGet, "/api/v1/status", nil, &st)
}

// Search runs a memory search.
func (c *Client) Search(ctx context.Context, q SearchRequest) ([]SearchHit, error) {
	var hits []SearchHit
	return hits, c.do(ctx, http.MethodGet, "/api/v1/search?"+q.values(), nil, &hits)
}

// ErrImportCut is an import whose stream ended before its summary: the
// daemon stopped, or the connection to it broke. What its progress
// reported as added is stored.
var ErrImportCut = errors.New("the import's stream ended before its summary (did the daemon stop?)")

// Import runs an import, calling progress as it goes.
func (c *Client) Import(ctx context.Context, req ImportRequest, progress func(ImportProgress)) (*ImportSummary, error) {
	resp, err := c.send(ctx, http.MethodPost, "/api/v1/import", req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev importEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("api: import stream: %w", err)
		}
		switch {
		case ev.Error != nil:
			return nil, &Error{Status: http.StatusOK, Code: ev.Error.Code, Message: ev.Error.Message}
		case ev.Summary != nil:
			return ev.Summary, nil
		case ev.Progress != nil && progress != nil:
			progress(*ev.Progress)
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("api: import stream: %w", err)
		}
		return nil, fmt.Errorf("api: %w: %w", ErrImportCut, err)
	}
	return nil, fmt.Errorf("api: %w", ErrImportCut)
}

// memListener is an in-memory net.Listener: each dial is one net.Pipe.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "in-process" }
