package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
)

func proposalsCommand() *command {
	var state string
	return &command{
		name:    "proposals",
		args:    "[--state S] | show ID",
		summary: "list what omnibrain proposes to do (newest first), or show one proposal whole with its audit log",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&state, "state", "", "only states `S`, comma-separated: pending, approved, executing, executed, failed, rejected, expired, snoozed, superseded")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			switch {
			case len(args) == 2 && args[0] == "show":
				return showProposal(ctx, e, args[1])
			case len(args) > 0 && args[0] == "show":
				return usagef("proposals show takes one proposal id (omnibrain proposals lists them)")
			case len(args) > 0:
				return usagef("proposals takes no arguments except: show ID")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			var states []string
			if state != "" {
				states = strings.Split(state, ",")
			}
			for _, st := range states {
				if !approval.ValidState(approval.State(st)) {
					return usagef("proposals: --state %q: want pending, approved, executing, executed, failed, rejected, expired, snoozed or superseded", st)
				}
			}
			ps, err := c.Proposals(ctx, states...)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(ps)
			}
			if len(ps) == 0 {
				e.printf("no proposals\n")
				return nil
			}
			loc := e.location()
			e.printf("%-10s  %-10s  %-16s  %-11s  %s\n", "ID", "STATE", "KIND", "EXPIRES", "TITLE")
			for _, p := range ps {
				e.printf("%-10s  %-10s  %-16s  %-11s  %s\n", p.ID, p.State, p.Kind, p.Expires.In(loc).Format("Jan 2 15:04"), p.Title)
				for _, w := range p.Warnings {
					e.printf("%-10s  ⚠️  %s\n", "", w.Text)
				}
			}
			return nil
		},
	}
}

// location is the owner's timezone for printing times.
func (e *env) location() *time.Location {
	if cfg, err := e.config(); err == nil && cfg.Location != nil {
		return cfg.Location
	}
	return time.Local
}

func showProposal(ctx context.Context, e *env, id string) error {
	c, err := e.api(ctx)
	if err != nil {
		return err
	}
	d, err := c.Proposal(ctx, id)
	if err != nil {
		return proposalError(id, err)
	}
	if e.json {
		return e.printJSON(d)
	}
	printProposal(e, d.Proposal)
	e.printf("\naudit\n")
	for _, a := range d.Audit {
		line := fmt.Sprintf("  %s  %-10s %-14s", a.Time.In(e.location()).Format("2006-01-02 15:04:05"), a.Action, a.Actor)
		if a.Detail != "" {
			line += " " + a.Detail
		}
		e.printf("%s\n", line)
	}
	return nil
}

// printProposal prints the whole payload — what would be sent, exactly.
func printProposal(e *env, p *approval.Proposal) {
	loc := e.location()
	e.printf("%s  %s  (%s)\n", p.ID, p.Title, p.State)
	e.printf("kind     %s, proposed by %s %s, expires %s\n", p.Kind, p.Origin, p.Created.In(loc).Format("Jan 2 15:04"), p.Expires.In(loc).Format("Jan 2 15:04"))
	if p.Reason != "" {
		e.printf("why      %s\n", p.Reason)
	}
	if p.DecidedBy != "" {
		e.printf("decided  by %s at %s\n", p.DecidedBy, p.Decided.In(loc).Format("Jan 2 15:04:05"))
	}
	if p.SupersededBy != "" {
		e.printf("replaced by %s\n", p.SupersededBy)
	}
	if p.RemoteID != "" {
		e.printf("remote   %s\n", p.RemoteID)
	}
	if p.Error != "" {
		e.printf("error    %s\n", p.Error)
	}
	e.printf("hash     %s\n", p.PayloadHash)
	for _, w := range p.Warnings {
		e.printf("⚠️  %s\n", w.Text)
	}
	e.printf("\n")
	if p.Kind == approval.KindPluginAction {
		// The arguments as sent, all of them.
		var v any
		json.Unmarshal(p.Payload, &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		e.printf("%s\n", b)
		return
	}
	fields, text := approval.Describe(p, loc)
	for _, f := range fields {
		e.printf("%s: %s\n", f.Name, f.Value)
	}
	if text != "" {
		e.printf("\n%s\n", text)
	}
}

func approveCommand() *command {
	var hash string
	return &command{
		name:    "approve",
		args:    "ID [--hash H]",
		summary: "approve a proposal: prints the exact payload and its hash, and approves that payload only",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&hash, "hash", "", "approve only if the payload hash is `H` (what you reviewed)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("approve takes one proposal id")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			d, err := c.Proposal(ctx, args[0])
			if err != nil {
				return proposalError(args[0], err)
			}
			shown := d.Proposal
			if hash != "" && hash != shown.PayloadHash {
				return fmt.Errorf("proposal %s has payload hash %s, not %s: review it again (omnibrain proposals show %s)", shown.ID, shown.PayloadHash, hash, shown.ID)
			}
			if !e.json {
				e.printf("Approving exactly this:\n\n")
				printProposal(e, shown)
				e.printf("\n")
				if cfg, err := e.config(); err == nil && cfg.Approval.SendDelay > 0 {
					e.printf("It runs after the send delay (%s); until then Ctrl-C or omnibrain undo %s stops it.\n", cfg.Approval.SendDelay, shown.ID)
				}
			}
			p, err := c.Approve(ctx, shown.ID, shown.PayloadHash)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(p)
			}
			switch p.State {
			case approval.StateExecuted:
				e.printf("approved and done (remote id %s)\n", p.RemoteID)
			case approval.StateFailed:
				return fmt.Errorf("approved, but it failed: %s (not retried)", p.Error)
			case approval.StateApproved:
				if wait := time.Until(p.ExecuteAfter); wait > 0 {
					e.printf("approved: the daemon carries it out at %s, in %s; until then: omnibrain undo %s\n",
						p.ExecuteAfter.In(e.location()).Format("15:04:05"), wait.Round(time.Second), p.ID)
					return nil
				}
				e.printf("approved: the daemon carries it out now (see omnibrain proposals show %s)\n", p.ID)
			default:
				e.printf("approved; it is %s now (see omnibrain proposals show %s)\n", p.State, p.ID)
			}
			return nil
		},
	}
}

func undoCommand() *command {
	return &command{
		name:    "undo",
		args:    "ID",
		summary: "take back an approval during its send delay: nothing is sent and the proposal waits for you again",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("undo takes one proposal id")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			p, err := c.Undo(ctx, args[0])
			if err != nil {
				return proposalError(args[0], err)
			}
			if e.json {
				return e.printJSON(p)
			}
			e.printf("undone: %s is pending again, nothing was sent (approve it again with: omnibrain approve %s)\n", p.ID, p.ID)
			return nil
		},
	}
}

func rejectCommand() *command {
	return &command{
		name:    "reject",
		args:    "ID",
		summary: "reject a proposal: it will never be carried out",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("reject takes one proposal id")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			p, err := c.Reject(ctx, args[0])
			if err != nil {
				return proposalError(args[0], err)
			}
			if e.json {
				return e.printJSON(p)
			}
			e.printf("rejected %s: %s\n", p.ID, p.Title)
			return nil
		},
	}
}

func editCommand() *command {
	var body, file, payloadFile string
	return &command{
		name:    "edit",
		args:    "ID [--body TEXT | --file F | --payload F]",
		summary: "replace a proposal's text (or whole payload) by a new proposal that needs its own approval; without flags opens $EDITOR",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&body, "body", "", "the new text `TEXT` (mail or comment body, event description)")
			fs.StringVar(&file, "file", "", "read the new text from file `F` (- for standard input)")
			fs.StringVar(&payloadFile, "payload", "", "read a whole new JSON payload from file `F` (- for standard input)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("edit takes one proposal id")
			}
			set := 0
			for _, v := range []string{body, file, payloadFile} {
				if v != "" {
					set++
				}
			}
			if set > 1 {
				return usagef("give only one of --body, --file and --payload")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			var req api.EditRequest
			switch {
			case body != "":
				req.Body = &body
			case file != "":
				text, err := e.readInput(file)
				if err != nil {
					return err
				}
				req.Body = &text
			case payloadFile != "":
				raw, err := e.readInput(payloadFile)
				if err != nil {
					return err
				}
				if !json.Valid([]byte(raw)) {
					return fmt.Errorf("%s is not valid JSON", payloadFile)
				}
				req.Payload = json.RawMessage(raw)
			default:
				d, err := c.Proposal(ctx, args[0])
				if err != nil {
					return proposalError(args[0], err)
				}
				text, err := e.editInEditor(ctx, approval.Body(d.Proposal.Kind, d.Proposal.Payload))
				if err != nil {
					return err
				}
				req.Body = &text
			}
			p, err := c.Edit(ctx, args[0], req)
			if err != nil {
				return proposalError(args[0], err)
			}
			if e.json {
				return e.printJSON(p)
			}
			e.printf("%s replaces %s and needs its own approval:\n\n", p.ID, p.Supersedes)
			printProposal(e, p)
			e.printf("\napprove it with: omnibrain approve %s\n", p.ID)
			return nil
		},
	}
}

// proposalError says plainly that an id names no proposal, and where the
// ids are; other errors pass through apiError.
func proposalError(id string, err error) error {
	if errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("no proposal %q (omnibrain proposals lists them)", id)
	}
	return apiError(err)
}

func (e *env) readInput(path string) (string, error) {
	if path == "-" {
		b, err := io.ReadAll(e.stdin)
		return string(b), err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// editInEditor lets the owner edit text in $VISUAL or $EDITOR.
func (e *env) editInEditor(ctx context.Context, text string) (string, error) {
	editor := e.getenv("VISUAL")
	if editor == "" {
		editor = e.getenv("EDITOR")
	}
	if editor == "" {
		return "", usagef("no --body, --file or --payload given and $EDITOR is not set")
	}
	dir, err := os.MkdirTemp("", "omnibrain-edit-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "draft.txt")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", err
	}
	parts := strings.Fields(editor)
	cmd := exec.CommandContext(ctx, parts[0], append(parts[1:], path)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, e.stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("editor %s: %w", editor, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if string(b) == text {
		return "", errors.New("the text is unchanged: nothing to do")
	}
	return string(b), nil
}
