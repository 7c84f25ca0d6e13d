package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/config"
	fake "github.com/omnibrain/omnibrain/internal/fakes/github"
)

type authEnv struct {
	home           string
	srv            *fake.Server
	stdout, stderr bytes.Buffer
	vars           map[string]string
}

func newAuthEnv(t *testing.T, opts fake.Options) *authEnv {
	t.Helper()
	srv := fake.New(opts)
	t.Cleanup(srv.Close)
	home := filepath.Join(t.TempDir(), "home")
	return &authEnv{home: home, srv: srv, vars: map[string]string{"OMNIBRAIN_HOME": home, "OMNIBRAIN_GITHUB_API_URL": srv.URL()}}
}

func (a *authEnv) run(t *testing.T, stdin string, json bool, tokenFile string, tokenStdin bool) error {
	t.Helper()
	e := &env{stdin: strings.NewReader(stdin), stdout: &a.stdout, stderr: &a.stderr, getenv: func(k string) string { return a.vars[k] }, json: json}
	defer e.close()
	return authGitHub(context.Background(), e, tokenFile, tokenStdin)
}

func TestAuthGitHubStoresVerifiedToken(t *testing.T) {
	a := newAuthEnv(t, fake.Options{Login: "mona", Token: "ghp_good", Scopes: []string{"notifications", "read:org"}})
	if err := a.run(t, "ghp_good\n", false, "", true); err != nil {
		t.Fatal(err)
	}
	out := a.stdout.String()
	for _, want := range []string{"authenticated as mona", "scopes: notifications, read:org", "github-token"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(a.stderr.String(), `lacks the "repo" scope`) || strings.Contains(a.stderr.String(), `"notifications" scope`) {
		t.Errorf("warnings:\n%s", a.stderr.String())
	}
	path := filepath.Join(a.home, config.GitHubTokenFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if strings.Contains(out+a.stderr.String(), "ghp_good") {
		t.Error("the token was printed")
	}
	// The daemon's configuration picks the saved token up by default.
	cfg, err := config.Load(a.home, func(k string) string { return a.vars[k] }, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.Token.Reveal() != "ghp_good" {
		t.Errorf("config token = %q, want the saved one", cfg.GitHub.Token.Reveal())
	}
	if reqs := a.srv.Requests(); len(reqs) != 1 || reqs[0].Path != "/user" || reqs[0].Header.Get("Authorization") != "Bearer ghp_good" {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestAuthGitHubTokenFileJSON(t *testing.T) {
	a := newAuthEnv(t, fake.Options{Login: "mona", Scopes: []string{"repo"}})
	file := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(file, []byte("  ghp_fromfile \n"), 0o644)
	if err := a.run(t, "", true, file, false); err != nil {
		t.Fatal(err)
	}
	var res githubAuthResult
	if err := json.Unmarshal(a.stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, a.stdout.String())
	}
	if res.Login != "mona" || len(res.Missing) != 0 || res.Scopes[0] != "repo" {
		t.Errorf("result = %+v", res)
	}
	got, err := config.ReadSecretFile(res.TokenFile)
	if err != nil || got.Reveal() != "ghp_fromfile" {
		t.Errorf("saved %q, %v", got.Reveal(), err)
	}
}

func TestAuthGitHubFineGrainedToken(t *testing.T) {
	a := newAuthEnv(t, fake.Options{Login: "mona"}) // no X-OAuth-Scopes
	if err := a.run(t, "github_pat_x", false, "", true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.stdout.String(), "scopes: not reported") {
		t.Errorf("output:\n%s", a.stdout.String())
	}
}

func TestAuthGitHubRefusesBadTokens(t *testing.T) {
	tests := map[string]struct {
		stdin      string
		tokenStdin bool
		want       string
	}{
		"rejected by GitHub": {"ghp_wrong", true, "rejected the token"},
		"empty":              {"\n", true, "empty"},
		"two words":          {"ghp_a ghp_b", true, "does not look like"},
		"no terminal":        {"", false, "no terminal"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			a := newAuthEnv(t, fake.Options{Token: "ghp_good"})
			err := a.run(t, tt.stdin, false, "", tt.tokenStdin)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(a.home, config.GitHubTokenFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a token file was written: %v", err)
			}
		})
	}
	a := newAuthEnv(t, fake.Options{})
	if err := a.run(t, "x", false, "f", true); err == nil {
		t.Error("--token-file with --token-stdin accepted")
	}
}

func TestMissingScopes(t *testing.T) {
	tests := []struct {
		have []string
		want string
	}{
		{nil, "notifications,repo"},
		{[]string{"repo"}, ""},
		{[]string{"notifications", "public_repo"}, "repo"},
	}
	for _, tt := range tests {
		if got := strings.Join(missingScopes(tt.have), ","); got != tt.want {
			t.Errorf("missingScopes(%v) = %q, want %q", tt.have, got, tt.want)
		}
	}
	if got := parseScopes(" repo,  notifications ,"); len(got) != 2 || got[1] != "notifications" {
		t.Errorf("parseScopes = %q", got)
	}
}

func TestAuthGitHubCommandLine(t *testing.T) {
	a := newAuthEnv(t, fake.Options{Login: "mona", Token: "ghp_cli", Scopes: []string{"repo", "notifications"}})
	err := run(context.Background(), []string{"--home", a.home, "auth", "github", "--token-stdin", "--json"},
		strings.NewReader("ghp_cli\n"), &a.stdout, &a.stderr, func(k string) string { return a.vars[k] })
	if err != nil {
		t.Fatalf("%v\n%s", err, a.stderr.String())
	}
	var res githubAuthResult
	if err := json.Unmarshal(a.stdout.Bytes(), &res); err != nil || res.Login != "mona" || len(res.Missing) != 0 {
		t.Errorf("result %+v %v", res, err)
	}
	if got, err := config.ReadSecretFile(filepath.Join(a.home, config.GitHubTokenFile)); err != nil || got.Reveal() != "ghp_cli" {
		t.Errorf("saved %v %v", got, err)
	}
}

// TestGitHubFromAuthToCollect drives the CLI as the owner would: collect
// says what to run, auth github saves the token, collect then stores the
// review request, and a second collect adds nothing.
func TestGitHubFromAuthToCollect(t *testing.T) {
	a := newAuthEnv(t, fake.Options{Login: "mona", Token: "ghp_e2e", Scopes: []string{"repo", "notifications"}})
	a.srv.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Review me", Author: "alice", Reviewers: []string{"mona"}})
	cli := func(stdin string, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"--home", a.home}, args...), strings.NewReader(stdin), &out, &errOut,
			func(k string) string { return a.vars[k] })
		return out.String() + errOut.String(), err
	}
	out, err := cli("", "collect", "github")
	if err == nil || !strings.Contains(out, "disabled") || !strings.Contains(out, "omnibrain auth github") {
		t.Fatalf("collect before auth: %v, want a failure with the fix\n%s", err, out)
	}
	if out, err := cli("ghp_e2e\n", "auth", "github", "--token-stdin"); err != nil {
		t.Fatalf("auth: %v\n%s", err, out)
	}
	out, err = cli("", "collect", "github", "--json")
	if err != nil {
		t.Fatalf("collect: %v\n%s", err, out)
	}
	var res []struct {
		State  string `json:"state"`
		Stored int    `json:"stored"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].State != "ok" || res[0].Stored != 1 {
		t.Fatalf("collect after auth: %v %s", err, out)
	}
	out, _ = cli("", "collect", "github", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || res[0].Stored != 0 {
		t.Errorf("second collect: %v %s", err, out)
	}
}
