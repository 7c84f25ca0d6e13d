package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

func TestDaemonStartsOnEmptyHomeServesStatusAndStopsOnSIGTERM(t *testing.T) {
	home := filepath.Join(t.TempDir(), "does", "not", "exist")
	d := startDaemon(t, home)

	fi, err := os.Stat(home)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("home mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	sock, err := os.Stat(filepath.Join(home, api.SocketName))
	if err != nil || sock.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", sock.Mode().Perm(), err)
	}

	out, errOut, code := runCLI(t, home, "status", "--json")
	if code != 0 {
		t.Fatalf("status exit %d: %s", code, errOut)
	}
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	if !st.Daemon || st.PID != d.cmd.Process.Pid || st.Overall == "" || len(st.Components) == 0 || st.Items == nil {
		t.Fatalf("status = %+v; want the daemon's own status with components and item counts", st)
	}
	// Embedded defaults are a supported setup: nothing in it is a fault.
	if st.Overall != "ok" {
		t.Errorf("overall %s on embedded defaults: %+v", st.Overall, st.Components)
	}
	names := map[string]bool{}
	for _, c := range st.Components {
		names[c.Name] = true
	}
	for _, want := range []string{"store", "api"} {
		if !names[want] {
			t.Errorf("status has no component %q: %+v", want, st.Components)
		}
	}

	// A second daemon on the same home refuses to start and says why,
	// naming the one to stop.
	_, errOut, code = runCLI(t, home, "run")
	if code == 0 || !strings.Contains(errOut, fmt.Sprintf("(pid %d) is already running", d.cmd.Process.Pid)) {
		t.Fatalf("second daemon: exit %d, stderr %q", code, errOut)
	}

	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("daemon exit after SIGTERM = %v; want a clean exit\n%s", err, d.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(home, api.SocketName)); !os.IsNotExist(err) {
		t.Errorf("socket left behind after a clean stop: %v", err)
	}
	if !strings.Contains(d.stderr.String(), "omnibrain stopped") {
		t.Errorf("no shutdown log line:\n%s", d.stderr.String())
	}

	// With the daemon gone, the CLI answers in-process from the same home.
	out, errOut, code = runCLI(t, home, "status", "--json")
	if code != 0 {
		t.Fatalf("status without daemon: exit %d: %s", code, errOut)
	}
	st = api.Status{}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Daemon {
		t.Fatalf("status without daemon = %+v, %v", st, err)
	}

	// Ctrl-C in a terminal (SIGINT) stops it as cleanly as SIGTERM.
	d = startDaemon(t, home)
	if err := d.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("daemon exit after SIGINT = %v; want a clean exit\n%s", err, d.stderr.String())
	}
	if !strings.Contains(d.stderr.String(), "omnibrain stopped") {
		t.Errorf("no shutdown log line after SIGINT:\n%s", d.stderr.String())
	}
}

// The running daemon's API refuses, over loopback TCP, a request without
// the token or with a wrong one, and on both TCP and the Unix socket a
// request with a foreign Host (DNS rebinding) or with an Origin header (a
// browser page): each with the one JSON error shape.
func TestDaemonAPIRefusesWhatALocalAPIMustNot(t *testing.T) {
	home := t.TempDir()
	addr := freeLoopbackAddr(t)
	d := startDaemon(t, home, "OMNIBRAIN_API_LISTEN="+addr)
	waitListening(t, d, addr) // startDaemon waits for the socket; TCP is its own component

	b, err := os.ReadFile(filepath.Join(home, api.TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(home, api.TokenFileName))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode = %o, want 600", fi.Mode().Perm())
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 32 {
		t.Fatalf("token %d characters long; want a long random one", len(token))
	}

	tcp := &http.Client{}
	socket := filepath.Join(home, api.SocketName)
	unix := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer unix.CloseIdleConnections()
	tests := []struct {
		name     string
		client   *http.Client
		url      string
		host     string
		origin   string
		auth     string
		wantCode int
	}{
		{"tcp without token", tcp, "http://" + addr, "", "", "", http.StatusUnauthorized},
		{"tcp with wrong token", tcp, "http://" + addr, "", "", "Bearer " + token[:len(token)-1] + "x", http.StatusUnauthorized},
		{"tcp token not as bearer", tcp, "http://" + addr, "", "", token, http.StatusUnauthorized},
		{"tcp foreign host", tcp, "http://" + addr, "evil.example:80", "", "Bearer " + token, http.StatusForbidden},
		{"tcp origin", tcp, "http://" + addr, "", "http://127.0.0.1:8000", "Bearer " + token, http.StatusForbidden},
		{"tcp with token", tcp, "http://" + addr, "", "", "Bearer " + token, http.StatusOK},
		{"socket foreign host", unix, "http://omnibrain", "attacker.test", "", "", http.StatusForbidden},
		{"socket origin", unix, "http://omnibrain", "", "https://mail.example.com", "", http.StatusForbidden},
		{"socket", unix, "http://omnibrain", "", "", "", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tc.url+"/api/v1/status", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if tc.wantCode == http.StatusOK {
				var st api.Status
				if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || !st.Daemon {
					t.Fatalf("status body = %+v, %v", st, err)
				}
				return
			}
			var eb api.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("error body = %+v, %v; want the JSON error shape", eb, err)
			}
		})
	}
	// The shared Go client works with the token, and not without.
	if _, err := api.NewTCPClient("http://"+addr, "").Status(context.Background()); err == nil {
		t.Fatal("TCP API answered the client without a token")
	}
	if st, err := api.NewTCPClient("http://"+addr, token).Status(context.Background()); err != nil || !st.Daemon {
		t.Fatalf("TCP API with the token: %+v, %v", st, err)
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestCommandLine(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{[]string{"--help"}, 0, "Commands:", ""},
		{[]string{"help", "status"}, 0, "Usage: omnibrain status", ""},
		{[]string{"status", "--help"}, 0, "Usage: omnibrain status", ""},
		{[]string{"version"}, 0, "omnibrain ", ""},
		{[]string{"version", "--json"}, 0, `"go":`, ""},
		{[]string{"--version"}, 0, "omnibrain ", ""},
		{[]string{"version", "extra"}, 2, "", "takes no arguments"},
		{[]string{}, 2, "", "no command"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"status", "--bogus"}, 2, "", "flag provided but not defined"},
		{[]string{"status", "extra"}, 2, "", "takes no arguments"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, home, tc.args...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errOut)
			}
		})
	}
}

// Every command explains itself: `omnibrain CMD --help` and `omnibrain
// help CMD` print its usage line and summary and exit 0, and --help on the
// top level lists it.
func TestEveryCommandHasHelp(t *testing.T) {
	var top bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, nil, &top, io.Discard, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	checkWidth(t, "--help", top.String())
	for _, c := range commands() {
		if c.summary == "" {
			t.Errorf("%s has no summary", c.name)
		}
		if !strings.Contains(top.String(), "\n  "+c.name+" ") {
			t.Errorf("omnibrain --help does not list %s", c.name)
		}
		for _, args := range [][]string{{c.name, "--help"}, {"help", c.name}} {
			var out, errOut bytes.Buffer
			err := run(context.Background(), args, nil, &out, &errOut, func(string) string { return "" })
			flat := strings.Join(strings.Fields(out.String()), " ") // the summary is wrapped
			if err != nil || !strings.HasPrefix(out.String(), "Usage: omnibrain "+c.name) || !strings.Contains(flat, c.summary) {
				t.Errorf("omnibrain %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
			}
			checkWidth(t, strings.Join(args, " "), out.String())
		}
	}
}

// checkWidth fails the test for a help line wider than a standard terminal.
func checkWidth(t *testing.T, what, help string) {
	t.Helper()
	for _, line := range strings.Split(help, "\n") {
		if n := utf8.RuneCountInString(line); n > helpWidth {
			t.Errorf("omnibrain %s: a line of %d columns:\n%s", what, n, line)
		}
	}
}

// A broken configuration stops every command, the daemon included, with
// exit status 1 and a message that says where the problem is; never a
// panic, never a start on half a configuration.
func TestCorruptConfigIsAClearErrorNotACrash(t *testing.T) {
	tests := []struct {
		name  string
		setup func(home string) error
		want  []string
	}{
		{"unknown key", func(home string) error {
			return os.WriteFile(filepath.Join(home, "config.yaml"), []byte("timezone: UTC\nbogus_key: 1\n"), 0o600)
		}, []string{"config.yaml", `line 2: unknown key "bogus_key"`}},
		{"binary garbage", func(home string) error {
			return os.WriteFile(filepath.Join(home, "config.yaml"), []byte{0, 1, 0xfe, 0xff, 'x'}, 0o600)
		}, []string{"config.yaml", "control characters"}},
		{"wrong type", func(home string) error {
			return os.WriteFile(filepath.Join(home, "config.yaml"), []byte("schedule:\n  mail: often\n"), 0o600)
		}, []string{"config.yaml", "line 2"}},
		{"invalid value", func(home string) error {
			return os.WriteFile(filepath.Join(home, "config.yaml"), []byte("timezone: Mars/Olympus\n"), 0o600)
		}, []string{"timezone", "Mars/Olympus", "IANA"}},
		{"a directory", func(home string) error {
			return os.Mkdir(filepath.Join(home, "config.yaml"), 0o700)
		}, []string{"config.yaml", "is a directory"}},
		{"secret in a world-readable file", func(home string) error {
			return os.WriteFile(filepath.Join(home, "config.yaml"), []byte("github:\n  token: ghp_inline_token_1234\n"), 0o644)
		}, []string{"config.yaml", "chmod 600"}},
	}
	for _, tc := range tests {
		for _, cmd := range []string{"run", "status"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				home := t.TempDir()
				if err := tc.setup(home); err != nil {
					t.Fatal(err)
				}
				_, errOut, code := runCLI(t, home, cmd)
				if code != 1 || strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine") {
					t.Fatalf("exit %d, stderr %q; want exit 1 and a message", code, errOut)
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut, w) {
						t.Errorf("stderr %q does not mention %q", errOut, w)
					}
				}
				if strings.Contains(errOut, "ghp_inline_token_1234") {
					t.Errorf("the error shows the secret: %q", errOut)
				}
				if _, err := os.Stat(filepath.Join(home, api.SocketName)); err == nil {
					t.Errorf("%s served a socket on a broken configuration", cmd)
				}
			})
		}
	}
}

// No secret ever reaches a log line: the daemon runs at debug level with
// every credential set, against servers that fail and echo what they were
// sent (the path, which for Telegram holds the bot token, and the
// Authorization header), and is driven through collection, chat and a
// refused API call. Neither its log nor `status --json` may contain any of
// the secrets.
func TestDaemonNeverLogsSecrets(t *testing.T) {
	secrets := map[string]string{
		"telegram token":       "7654321:AAH-telegram-SECRET-token-value",
		"github token":         "ghp_githubSECRETtoken0123456789",
		"llm api key":          "sk-llmSECRETkey0123456789",
		"google client secret": "GOCSPX-googleSECRETclient",
		"google access token":  "ya29.googleSECRETaccess",
		"google refresh token": "1//googleSECRETrefresh",
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A misbehaving upstream that reflects the request in its error.
		msg := fmt.Sprintf("denied %s %s (auth %q)", r.Method, r.URL.String(), r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// The error fields of Telegram, GitHub, OpenAI and Google, all at once.
		json.NewEncoder(w).Encode(map[string]any{
			"ok":          false,
			"error_code":  401,
			"description": msg,
			"message":     msg,
			"error":       map[string]any{"message": msg, "type": "invalid_request_error", "code": 401, "status": "UNAUTHENTICATED"},
		})
	}))
	defer echo.Close()

	home := t.TempDir()
	tok := fmt.Sprintf(`{"access_token":%q,"refresh_token":%q,"token_type":"Bearer","expiry":"2099-01-01T00:00:00Z"}`,
		secrets["google access token"], secrets["google refresh token"])
	if err := os.WriteFile(filepath.Join(home, "google-token.json"), []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	d := startDaemon(t, home,
		"OMNIBRAIN_LOG_LEVEL=debug",
		"OMNIBRAIN_API_LISTEN="+addr,
		"OMNIBRAIN_TELEGRAM_TOKEN="+secrets["telegram token"],
		"OMNIBRAIN_TELEGRAM_API_URL="+echo.URL,
		"OMNIBRAIN_TELEGRAM_OWNER_ID=4242",
		"OMNIBRAIN_GITHUB_TOKEN="+secrets["github token"],
		"OMNIBRAIN_GITHUB_API_URL="+echo.URL,
		"OMNIBRAIN_LLM_PROVIDER=openai",
		"OMNIBRAIN_LLM_BASE_URL="+echo.URL+"/v1",
		"OMNIBRAIN_LLM_API_KEY="+secrets["llm api key"],
		"OMNIBRAIN_LLM_MODEL=gpt-test",
		"OMNIBRAIN_GOOGLE_CLIENT_ID=client-id.apps.googleusercontent.com",
		"OMNIBRAIN_GOOGLE_CLIENT_SECRET="+secrets["google client secret"],
		"OMNIBRAIN_GOOGLE_API_URL="+echo.URL,
		"OMNIBRAIN_GOOGLE_TOKEN_URL="+echo.URL+"/token",
	)
	apiToken, err := os.ReadFile(filepath.Join(home, api.TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	secrets["api token"] = strings.TrimSpace(string(apiToken))

	// Every collector fails against the echo server; chat fails at the model.
	runCLI(t, home, "collect")
	runCLI(t, home, "chat", "what is on my calendar today?")
	// A request with a wrong token is refused and logged.
	waitListening(t, d, addr)
	if _, err := api.NewTCPClient("http://"+addr, "wrong-"+secrets["api token"]).Status(context.Background()); err == nil {
		t.Fatal("TCP API accepted a wrong token")
	}
	status, errOut, code := runCLI(t, home, "status", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("daemon exit after SIGTERM = %v", err)
	}
	logs := d.stderr.String()

	// The test must have provoked failures worth logging, or it proves nothing.
	for _, want := range []string{"gmail", "telegram", "model call failed", "refused request"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log never mentions %q: the failure paths were not exercised\n%s", want, logs)
		}
	}
	if !strings.Contains(logs, "[redacted]") {
		t.Errorf("nothing was redacted: the echoing server's errors did not reach the log\n%s", logs)
	}
	for what, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the %s appears in the daemon's log", what)
		}
		if strings.Contains(status, s) {
			t.Errorf("the %s appears in status --json", what)
		}
	}
	if t.Failed() {
		t.Logf("daemon log:\n%s", logs)
	}
}

// kill -9 of the daemon while it imports (the CLI hands the import to the
// running daemon) loses nothing the CLI reported as added, leaves a sound
// database, and after a restart a re-run completes without duplicates.
func TestDaemonKilledDuringImportLosesNothingAcknowledged(t *testing.T) {
	enron := testutil.SharedData(t, "mail/enron/maildir")
	home := t.TempDir()
	d := startDaemon(t, home)

	// A progress line per batch: at one a second a fast machine finished first.
	cmd, stderr := startImport(t, home, enron)
	acked := -1
	var lines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		m := ackLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		done, _ := strconv.Atoi(m[1])
		total, _ := strconv.Atoi(m[2])
		added, _ := strconv.Atoi(m[3])
		if added > 0 && done < total {
			if err := d.cmd.Process.Kill(); err != nil { // SIGKILL the daemon, not the CLI
				t.Fatal(err)
			}
			acked = added
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	cliErr := cmd.Wait()
	if acked < 0 {
		t.Fatalf("the import finished (%v) before it acknowledged progress mid-way; stderr:\n%s", cliErr, strings.Join(lines, "\n"))
	}
	if cliErr == nil {
		t.Fatal("the CLI reported success although the daemon was killed mid-import")
	}
	select {
	case err := <-d.done:
		d.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("daemon still running after SIGKILL")
	}

	s, err := store.Open(context.Background(), filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored := countMaildir(t, s)
	if ok, err := s.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Fatalf("integrity_check after kill -9 = %q, %v", ok, err)
	}
	s.Close()
	if stored < int64(acked) || stored > 2195 {
		t.Fatalf("after kill -9 of the daemon: %d items stored, %d acknowledged", stored, acked)
	}
	t.Logf("daemon killed after %d acknowledged; %d were stored", acked, stored)

	// A new daemon over the same home (stale socket, released lock) finishes the job.
	startDaemon(t, home)
	out, errOut, code := runCLI(t, home, "import", "maildir", enron, "--json")
	if code != 0 {
		t.Fatalf("re-run exit %d: %s", code, errOut)
	}
	var sum api.ImportSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if sum.Added != 2195-int(stored) || sum.Unchanged != int(stored) || sum.Updated != 0 {
		t.Fatalf("re-run summary %+v (stored before: %d)", sum, stored)
	}
	st, errOut, code := runCLI(t, home, "status", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var status api.Status
	if err := json.Unmarshal([]byte(st), &status); err != nil || status.TotalItems != 2195 || !status.Daemon {
		t.Fatalf("status after the re-run = %+v, %v; want 2195 items", status, err)
	}
}

// waitListening waits until the daemon accepts TCP connections on addr.
func waitListening(t *testing.T, d *daemonProc, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never listened on %s: %v\n%s", addr, err, d.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Whatever umask it is started under, the daemon creates nothing in its
// home that another user could open: its socket included, which exists
// for a moment before it is chmodded.
func TestDaemonFilesArePrivateWhateverTheUmask(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	old := syscall.Umask(0)
	d := startDaemon(t, home)
	syscall.Umask(old)
	good, err := filepath.Abs(filepath.Join("..", "..", "collectors", "importer", "testdata", "good.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, home, "import", "jsonl", good); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	check := func() {
		err := filepath.WalkDir(home, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := de.Info()
			if err != nil {
				return err
			}
			if perm := fi.Mode().Perm(); perm&0o077 != 0 {
				t.Errorf("%s has mode %04o: others can open it", p, perm)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check()
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	check()
}

// Every flag that takes a value names it the way the command's usage line
// does ("-n K", "--since T"), not by its Go type ("--n int").
func TestFlagHelpMatchesUsageLine(t *testing.T) {
	for _, c := range commands() {
		if c.flags == nil {
			continue
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			name, _ := flag.UnquoteUsage(f)
			if name == "" { // a bool flag
				return
			}
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			if want := dash + f.Name + " " + name; !strings.Contains(c.args, want) {
				t.Errorf("%s: flag %s%s shows %q; the usage line %q lacks %q", c.name, dash, f.Name, name, c.args, want)
			}
		})
	}
}
