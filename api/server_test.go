package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/internal/logging"
	"github.com/omnibrain/omnibrain/search"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testServer(token string) *Server {
	return NewServer(logging.Discard(), token, Backends{
		Status: func(ctx context.Context) (*Status, error) { return &Status{Version: "test", Overall: "ok"}, nil },
	})
}

func TestGuardRefusesWhatALocalAPIMustNotServe(t *testing.T) {
	const token = "s3cret-token"
	srv := httptest.NewServer(testServer(token).TCPHandler())
	defer srv.Close()

	tests := []struct {
		name     string
		host     string
		origin   string
		auth     string
		wantCode int
		wantErr  string
	}{
		{"no token", "", "", "", http.StatusUnauthorized, "unauthorized"},
		{"wrong token", "", "", "Bearer nope", http.StatusUnauthorized, "unauthorized"},
		{"token without Bearer", "", "", token, http.StatusUnauthorized, "unauthorized"},
		{"foreign host", "evil.example.com", "", "Bearer " + token, http.StatusForbidden, "forbidden"},
		{"rebinding host with port", "attacker.test:7423", "", "Bearer " + token, http.StatusForbidden, "forbidden"},
		{"origin header", "", "http://localhost:3000", "Bearer " + token, http.StatusForbidden, "forbidden"},
		{"null origin", "", "null", "Bearer " + token, http.StatusForbidden, "forbidden"},
		{"good", "", "", "Bearer " + token, http.StatusOK, ""},
		{"good with localhost host", "localhost:7423", "", "Bearer " + token, http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/api/v1/status", nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if tc.wantErr != "" {
				var eb ErrorBody
				if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error.Code != tc.wantErr || eb.Error.Message == "" {
					t.Fatalf("error body = %+v, %v; want code %q", eb, err, tc.wantErr)
				}
			}
		})
	}
}

func TestEmptyTokenNeverAuthorises(t *testing.T) {
	srv := httptest.NewServer(testServer("").TCPHandler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/status", nil)
	req.Header.Set("Authorization", "Bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status = %d with no token configured, want 401", resp.StatusCode)
	}
}

func TestClientOverTCPAndErrors(t *testing.T) {
	srv := httptest.NewServer(testServer("tok").TCPHandler())
	defer srv.Close()
	c := NewTCPClient(srv.URL, "tok")
	st, err := c.Status(context.Background())
	if err != nil || st.Version != "test" {
		t.Fatalf("status = %+v, %v", st, err)
	}
	// An unknown route and an unavailable backend both answer the one error shape.
	var ae *Error
	for _, path := range []string{"/api/v1/nope", "/", "/api/v2/status"} {
		err = c.do(context.Background(), "GET", path, nil, nil)
		if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "not_found" || !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown route %s: %#v", path, err)
		}
	}
	_, err = c.Search(context.Background(), SearchRequest{Query: "x"})
	if !errors.As(err, &ae) || ae.Status != http.StatusNotImplemented || !strings.Contains(ae.Message, "search") {
		t.Fatalf("missing backend: %#v", err)
	}
	_, err = NewTCPClient(srv.URL, "wrong").Status(context.Background())
	if !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("wrong token: %#v", err)
	}
}

// Ping asks nothing of status (which counts every item); a daemon from
// before the ping route still answers it, anything else does not.
func TestPingAsksNothingOfStatus(t *testing.T) {
	ctx := context.Background()
	statusAsked := 0
	srv := httptest.NewServer(NewServer(logging.Discard(), "tok", Backends{
		Status: func(context.Context) (*Status, error) {
			statusAsked++
			return nil, errors.New("status is slow and failing")
		},
	}).TCPHandler())
	defer srv.Close()
	if err := NewTCPClient(srv.URL, "tok").Ping(ctx); err != nil || statusAsked != 0 {
		t.Fatalf("ping = %v with status asked %d times, want nil and 0", err, statusAsked)
	}
	if err := NewTCPClient(srv.URL, "wrong").Ping(ctx); err == nil {
		t.Fatal("ping with a wrong token answered")
	}

	older := http.NewServeMux()
	older.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.URL.Path)
	})
	old := httptest.NewServer(older)
	defer old.Close()
	if err := NewTCPClient(old.URL, "").Ping(ctx); err != nil {
		t.Fatalf("ping of a daemon without the route = %v, want nil", err)
	}

	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if err := NewTCPClient(other.URL, "").Ping(ctx); err == nil {
		t.Fatal("ping of a server that is not our API answered")
	}
}

func TestUnixSocketIsPrivateAndStaleSocketReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SocketName)
	// A stale socket file left by a crashed daemon.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- testServer("").ServeUnix(ctx, path) }()

	c := NewUnixClient(path)
	var st *Status
	for i := 0; i < 100; i++ {
		if st, err = c.Status(context.Background()); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || st.Version != "test" {
		t.Fatalf("status over socket = %+v, %v", st, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	// A second server on the same live socket refuses to start.
	if err := testServer("").ServeUnix(context.Background(), path); err == nil || !strings.Contains(err.Error(), "already serving") {
		t.Fatalf("second server: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("serve returned %v after cancel", err)
	}
	c.hc.CloseIdleConnections()
}

func TestInProcessClientStreamsImport(t *testing.T) {
	imp := importerFunc(func(ctx context.Context, req ImportRequest, progress func(ImportProgress)) (*ImportSummary, error) {
		if req.Format == "bad" {
			return nil, errors.New("unknown format bad")
		}
		for i := 1; i <= 3; i++ {
			progress(ImportProgress{Done: int64(i), Total: 3, Unit: "messages", Added: i})
			time.Sleep(120 * time.Millisecond) // the server throttles progress to 10/s
		}
		return &ImportSummary{Format: req.Format, Path: req.Path, Seen: 3, Added: 3}, nil
	})
	s := NewServer(logging.Discard(), "", Backends{Importer: imp})
	c, stop := NewInProcessClient(s.SocketHandler())
	defer stop()

	var seen []ImportProgress
	sum, err := c.Import(context.Background(), ImportRequest{Format: "jsonl", Path: "/x"}, func(p ImportProgress) { seen = append(seen, p) })
	if err != nil || sum.Added != 3 {
		t.Fatalf("summary = %+v, %v", sum, err)
	}
	if len(seen) < 2 {
		t.Fatalf("progress events = %v, want them streamed", seen)
	}
	if _, err := c.Import(context.Background(), ImportRequest{Format: "bad"}, nil); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("failing import: %v", err)
	}
}

type importerFunc func(context.Context, ImportRequest, func(ImportProgress)) (*ImportSummary, error)

func (f importerFunc) Import(ctx context.Context, req ImportRequest, p func(ImportProgress)) (*ImportSummary, error) {
	return f(ctx, req, p)
}

func TestOversizedBodyIsABadRequest(t *testing.T) {
	called := false
	imp := importerFunc(func(ctx context.Context, req ImportRequest, p func(ImportProgress)) (*ImportSummary, error) {
		called = true
		return &ImportSummary{}, nil
	})
	srv := httptest.NewServer(NewServer(logging.Discard(), "tok", Backends{Importer: imp}).TCPHandler())
	defer srv.Close()
	body := `{"format":"jsonl","path":"/x","pad":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/import", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(eb.Error.Message, "too large") {
		t.Fatalf("status %d, body %+v, %v; want 400 saying the body is too large", resp.StatusCode, eb, err)
	}
	if called {
		t.Fatal("the importer ran on an oversized request")
	}
}

// searchRecorder answers every search with no hits and keeps the queries.
type searchRecorder struct{ got []search.Query }

func (s *searchRecorder) Search(_ context.Context, q search.Query) ([]search.Hit, error) {
	s.got = append(s.got, q)
	return nil, nil
}

// A search needs words or a filter; filters alone are a listing.
func TestSearchNeedsAQueryOrAFilter(t *testing.T) {
	rec := &searchRecorder{}
	srv := httptest.NewServer(NewServer(logging.Discard(), "tok", Backends{Search: rec}).TCPHandler())
	defer srv.Close()
	c := NewTCPClient(srv.URL, "tok")
	var ae *Error
	if _, err := c.Search(context.Background(), SearchRequest{Query: "  "}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "or a filter") {
		t.Fatalf("no query and no filter: %v", err)
	}
	if len(rec.got) != 0 {
		t.Fatalf("searched %+v for a request without a query or filter", rec.got)
	}
	for _, req := range []SearchRequest{{Person: "Rick Buy"}, {Source: "maildir"}, {Since: time.Date(2001, 5, 14, 0, 0, 0, 0, time.UTC)}} {
		if _, err := c.Search(context.Background(), req); err != nil {
			t.Errorf("%+v: %v", req, err)
		}
	}
	if len(rec.got) != 3 || rec.got[0].Text != "" || len(rec.got[0].People) != 1 || rec.got[0].People[0] != "Rick Buy" || len(rec.got[1].Sources) != 1 || rec.got[2].Since.IsZero() {
		t.Fatalf("queries searched: %+v", rec.got)
	}
}

// A daemon that stops in the middle of an import ends its stream before
// the summary, cleanly or by dropping the connection: either way the
// client says the import was cut short, not that it failed to parse.
func TestImportCutShortIsSaidSo(t *testing.T) {
	for _, drop := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Write([]byte(`{"progress":{"done":1,"total":3,"unit":"messages","added":1}}` + "\n"))
			w.(http.Flusher).Flush()
			if drop { // as a daemon killed mid-import: no final chunk
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			}
		}))
		var added int
		_, err := NewTCPClient(srv.URL, "tok").Import(context.Background(), ImportRequest{Format: "jsonl", Path: "/x"}, func(p ImportProgress) { added = p.Added })
		srv.Close()
		if !errors.Is(err, ErrImportCut) || added != 1 {
			t.Errorf("dropped %v: err %v, progress added %d; want ErrImportCut after the progress line", drop, err, added)
		}
	}
}
