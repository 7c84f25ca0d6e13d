package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/omnibrain/omnibrain/api"
	ghcollect "github.com/omnibrain/omnibrain/collectors/github"
	"github.com/omnibrain/omnibrain/config"
)

// githubScopes are the classic-token scopes omnibrain uses, each with
// what it is for and the broader scopes that include it.
var githubScopes = []struct {
	name, why string
	covered   []string
}{
	{"notifications", "read your notifications", []string{"notifications", "repo"}},
	{"repo", "read private issues, pull requests and checks, and comment on them", []string{"repo"}},
}

// githubAuthResult is what `auth github --json` prints.
type githubAuthResult struct {
	Login     string   `json:"login"`
	Scopes    []string `json:"scopes"`
	Missing   []string `json:"missing_scopes"`
	TokenFile string   `json:"token_file"`
}

// authGitHub runs `omnibrain auth github`: tokenFile and tokenStdin are
// its flags (--token-file F, --token-stdin); with neither it prompts on
// the terminal without echo. The token is checked with GET /user, its
// scopes are shown (a classic token needs "notifications" and "repo"), and
// it is saved to HOME/github-token (0600), which the daemon re-reads when
// it changes unless OMNIBRAIN_GITHUB_TOKEN or github.token is set.
func authGitHub(ctx context.Context, e *env, tokenFile string, tokenStdin bool) error {
	if tokenFile != "" && tokenStdin {
		return usagef("auth github: use --token-file or --token-stdin, not both")
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	token, err := readGitHubToken(e, tokenFile, tokenStdin)
	if err != nil {
		return err
	}
	client, err := ghcollect.NewClient(cfg.GitHub.APIURL, token, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	user, resp, err := client.Users.Get(ctx, "")
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("GitHub (%s) rejected the token: check that it is complete and not expired or revoked; nothing was saved", cfg.GitHub.APIURL)
		}
		return fmt.Errorf("could not verify the token with GET /user at %s: %w; nothing was saved", cfg.GitHub.APIURL, err)
	}
	res := githubAuthResult{Login: user.GetLogin(), TokenFile: cfg.Path(config.GitHubTokenFile), Scopes: []string{}, Missing: []string{}}
	header, reported := resp.Header["X-Oauth-Scopes"]
	if reported {
		res.Scopes = parseScopes(strings.Join(header, ","))
		res.Missing = missingScopes(res.Scopes)
	}
	if err := config.WriteSecretFile(res.TokenFile, []byte(token+"\n")); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(res)
	}
	e.printf("GitHub: authenticated as %s at %s\n", res.Login, cfg.GitHub.APIURL)
	if reported {
		e.printf("scopes: %s\n", strings.Join(res.Scopes, ", "))
		for _, s := range githubScopes {
			if slices.Contains(res.Missing, s.name) {
				fmt.Fprintf(e.stderr, "warning: the token lacks the %q scope, needed to %s\n", s.name, s.why)
			}
		}
	} else {
		e.printf("scopes: not reported (a fine-grained token or an app token): give it read access to notifications,\n" +
			"issues, pull requests, commit statuses and checks, and write access to issues to post comments\n")
	}
	e.printf("token saved to %s\n", res.TokenFile)
	if e.getenv("OMNIBRAIN_GITHUB_TOKEN") != "" || cfg.GitHub.TokenFile != "" && cfg.GitHub.TokenFile != config.GitHubTokenFile {
		fmt.Fprintf(e.stderr, "note: OMNIBRAIN_GITHUB_TOKEN or github.token_file is set and takes precedence over %s\n", res.TokenFile)
	}
	if dialDaemon(ctx, cfg.Path(api.SocketName)) != nil {
		e.printf("the running daemon uses it from its next request\n")
	}
	return nil
}

// readGitHubToken reads the token from a file, standard input or the
// terminal, without echo.
func readGitHubToken(e *env, tokenFile string, tokenStdin bool) (string, error) {
	var raw string
	switch {
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", fmt.Errorf("read token: %w", err)
		}
		raw = string(b)
	case tokenStdin:
		line, err := bufio.NewReader(io.LimitReader(e.stdin, 64<<10)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read token from standard input: %w", err)
		}
		raw = line
	default:
		f, ok := e.stdin.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return "", usagef("auth github: no terminal to ask for the token on: use --token-file F or --token-stdin")
		}
		fmt.Fprint(e.stderr, "GitHub token (input hidden): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read token: %w", err)
		}
		raw = string(b)
	}
	token := strings.TrimSpace(raw)
	switch {
	case token == "":
		return "", errors.New("the token is empty")
	case strings.ContainsAny(token, " \t\r\n") || len(token) > 1024:
		return "", errors.New("that does not look like a GitHub token (one line, no spaces)")
	}
	return token, nil
}

// parseScopes splits an X-OAuth-Scopes header ("repo, notifications").
func parseScopes(h string) []string {
	out := []string{}
	for _, s := range strings.Split(h, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// missingScopes lists the scopes omnibrain uses that the token lacks;
// "repo" is satisfied by "public_repo" only in part, so it is reported.
func missingScopes(have []string) []string {
	out := []string{}
	for _, s := range githubScopes {
		if !slices.ContainsFunc(s.covered, func(c string) bool { return slices.Contains(have, c) }) {
			out = append(out, s.name)
		}
	}
	return out
}
