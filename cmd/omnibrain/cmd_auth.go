package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
)

func authCommand() *command {
	var tokenFile string
	var tokenStdin bool
	var timeout time.Duration
	return &command{
		name: "auth",
		args: "google [--token-file F | --token-stdin] [--timeout D] | github [--token-file F | --token-stdin]",
		summary: "connect Google (Gmail, Calendar) or GitHub; " +
			"'auth google' prints a URL to open, '--token-file F' imports an OAuth token JSON (for machines without a browser)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&tokenFile, "token-file", "", "import the token from file `F` instead of the browser flow (Google: a standard OAuth token JSON)")
			fs.BoolVar(&tokenStdin, "token-stdin", false, "read the token from standard input")
			fs.DurationVar(&timeout, "timeout", 5*time.Minute, "how long 'auth google' waits for the browser: `D` (e.g. 10m)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("auth needs one of: google, github (see omnibrain auth --help)")
			}
			switch args[0] {
			case "google":
				return authGoogle(ctx, e, tokenFile, tokenStdin, timeout)
			case "github":
				return authGitHub(ctx, e, tokenFile, tokenStdin) // cmd_auth_github.go
			default:
				return usagef("auth %q: want google or github", args[0])
			}
		},
	}
}

// googleAuthResult is what `auth google --json` prints.
type googleAuthResult struct {
	Email     string         `json:"email,omitempty"`
	TokenFile string         `json:"token_file"`
	Verified  bool           `json:"verified"`
	Warning   string         `json:"warning,omitempty"`
	Scopes    []google.Scope `json:"scopes"`
}

// authGoogle authorizes omnibrain for Gmail and Calendar. It writes the
// token file directly, so it works whether or not the daemon runs; a
// running daemon uses the new token at its next request.
func authGoogle(ctx context.Context, e *env, tokenFile string, tokenStdin bool, timeout time.Duration) error {
	if tokenFile != "" && tokenStdin {
		return usagef("auth google: use --token-file or --token-stdin, not both")
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	path := cfg.Path(google.TokenFileName)
	staged := path + ".new"
	defer os.Remove(staged)

	conf, confErr := google.OAuthConfig(cfg.Google)
	refreshConf := conf
	if confErr != nil {
		refreshConf = &oauth2.Config{Endpoint: google.Endpoint(cfg.Google)} // the token may carry its client
	}
	if tokenFile != "" || tokenStdin {
		var data []byte
		if tokenStdin {
			data, err = io.ReadAll(io.LimitReader(e.stdin, 1<<20))
		} else {
			data, err = os.ReadFile(tokenFile)
		}
		if err != nil {
			return fmt.Errorf("auth google: read the token: %w", err)
		}
		if err := google.ImportToken(staged, data, time.Now()); err != nil {
			return fmt.Errorf("auth google: %w", err)
		}
	} else {
		if errors.Is(confErr, google.ErrNoClient) {
			return errors.New("auth google: no OAuth client is configured.\n" +
				"Create an OAuth client of type \"Desktop app\" in the Google Cloud console, download its JSON and set\n" +
				"OMNIBRAIN_GOOGLE_CREDENTIALS to its path (or set OMNIBRAIN_GOOGLE_CLIENT_ID and OMNIBRAIN_GOOGLE_CLIENT_SECRET)")
		}
		if confErr != nil {
			return fmt.Errorf("auth google: %w", confErr)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		tok, err := google.Authorize(ctx, *conf, google.FlowOptions{Log: e.logger(cfg), Show: func(url string) error {
			fmt.Fprintf(e.stderr, "Open this URL in a browser on this machine and allow access:\n\n  %s\n\nomnibrain asks for:\n", url)
			for _, s := range google.Scopes() {
				fmt.Fprintf(e.stderr, "  - %s: %s\n", s.Name, s.Why)
			}
			fmt.Fprintf(e.stderr, "\nWaiting up to %v for the browser… (on a machine without a browser, use: omnibrain auth google --token-file FILE)\n", timeout)
			return nil
		}})
		switch {
		case errors.Is(err, context.Canceled):
			return errors.New("auth google: interrupted; nothing was saved")
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("auth google: no answer from the browser within %v; nothing was saved (try again, or use --token-file)", timeout)
		case err != nil:
			return err
		}
		if err := google.WriteToken(staged, tok, "", ""); err != nil {
			return err
		}
	}

	res := googleAuthResult{TokenFile: path, Scopes: google.Scopes()}
	email, err := verifyGoogle(ctx, cfg, refreshConf, staged)
	var revoked *google.RevokedError
	switch {
	case errors.As(err, &revoked) || google.IsStatus(err, 401):
		return fmt.Errorf("auth google: Google refused this token (%v); nothing was saved", err)
	case err != nil:
		res.Warning = fmt.Sprintf("could not check the token with Google (%v); it was saved anyway", err)
	default:
		res.Email, res.Verified = email, true
	}
	if err := os.Rename(staged, path); err != nil {
		return fmt.Errorf("auth google: save the token: %w", err)
	}
	if e.json {
		return e.printJSON(res)
	}
	if res.Verified {
		e.printf("Google: authorized as %s\n", res.Email)
	} else {
		fmt.Fprintf(e.stderr, "warning: %s\n", res.Warning)
	}
	e.printf("token saved to %s (mode 0600); a running daemon uses it at its next poll\n", path)
	return nil
}

// verifyGoogle reads the Gmail profile with the staged token (refreshing
// it if needed, which the staged file then keeps).
func verifyGoogle(ctx context.Context, cfg *config.Config, conf *oauth2.Config, staged string) (string, error) {
	auth := google.NewAuth(google.AuthOptions{Path: staged, Config: conf})
	svc, err := google.NewGmail(ctx, cfg.Google.APIURL, google.NewHTTPClient(google.ClientOptions{Auth: auth, Timeout: 30 * time.Second}))
	if err != nil {
		return "", err
	}
	p, err := svc.Users.GetProfile("me").Context(ctx).Do()
	if err != nil {
		return "", err
	}
	return strings.ToLower(p.EmailAddress), nil
}
