package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/store"
)

// Toolbox builds each job's own tools: the one proposal it may make, about
// its subject only. The model writes the text; recipients, threading, the
// repository and the rule come from the stored item or pattern, and the
// item's lifecycle must have reached the stage the proposal follows.
type Toolbox struct {
	Store  *store.Store
	Chains *graph.Chains
	// Automation is the standing rule the pattern (kind, key) suggests;
	// nil: automation jobs have no proposal tool.
	Automation func(ctx context.Context, kind, key string) (approval.Draft, bool, error)
}

// For returns the tools of a task's job (agent.Options.JobTools).
func (tb Toolbox) For(_ context.Context, t agent.Task) ([]*agent.Tool, error) {
	switch t.Kind {
	case DraftReply:
		id, err := itemOf(t.Subject)
		if err != nil {
			return nil, err
		}
		tool, err := tb.proposeReply(t.Subject, id)
		return []*agent.Tool{tool}, err
	case IssueAnalysis:
		id, err := itemOf(t.Subject)
		if err != nil {
			return nil, err
		}
		tool, err := tb.proposeComment(t.Subject, id)
		return []*agent.Tool{tool}, err
	case Automation:
		if tb.Automation == nil {
			return nil, nil
		}
		tool, err := tb.proposeAutomation(t.Subject)
		return []*agent.Tool{tool}, err
	}
	return nil, nil
}

// itemOf reads the item id of a subject "item:42".
func itemOf(subject string) (int64, error) {
	s, ok := strings.CutPrefix(subject, "item:")
	id, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("jobs: subject %q names no item", subject)
	}
	return id, nil
}

type bodyArgs struct {
	Body string `json:"body" jsonschema:"plain text, exactly what would be sent"`
}

// contextOf is the recorded context stage of a subject, or an error the
// model reads when the stage is missing.
func (tb Toolbox) contextOf(ctx context.Context, subject, stage, what string) (graph.Stage, error) {
	stages, err := tb.Chains.Of(ctx, subject)
	if err != nil {
		return graph.Stage{}, err
	}
	for _, s := range stages {
		if s.Name == stage {
			return s, nil
		}
	}
	return graph.Stage{}, fmt.Errorf("%s cannot be proposed yet: the %s's context has not been gathered", what, strings.TrimPrefix(subject, "item:"))
}

func (tb Toolbox) proposeReply(subject string, itemID int64) (*agent.Tool, error) {
	return agent.NewProposalTool("propose_reply", "Propose the reply to the mail being answered, for the owner's approval. Nothing is sent until the owner approves it.",
		func(ctx context.Context, a bodyArgs) (approval.Draft, error) {
			if strings.TrimSpace(a.Body) == "" {
				return approval.Draft{}, errors.New("body is empty")
			}
			cs, err := tb.contextOf(ctx, subject, graph.ContextGathered, "a reply")
			if err != nil {
				return approval.Draft{}, err
			}
			it, err := tb.Store.Item(ctx, itemID)
			if err != nil {
				return approval.Draft{}, err
			}
			m := triage.MailFromItem(it)
			payload := triage.ReplyPayload(m, strings.TrimSpace(a.Body))
			why := ""
			if tr, err := tb.Store.TriageOf(ctx, itemID); err == nil && tr.Reason != "" {
				why = strings.TrimRight(tr.Reason, ".") + ". "
			}
			name := m.FromName
			if name == "" {
				name = m.From
			}
			return approval.Draft{
				Kind: approval.KindReply, Title: fmt.Sprintf("Reply to %s: %s", name, payload.Subject),
				Reason:  why + "Drafted with context: " + cs.Detail,
				Origin:  "proactive",
				Payload: payload, ItemID: itemID, Thread: it.Thread,
			}, nil
		})
}

func (tb Toolbox) proposeComment(subject string, itemID int64) (*agent.Tool, error) {
	return agent.NewProposalTool("propose_comment", "Propose a comment on the GitHub issue or pull request being analysed, for the owner's approval. Only when the owner should answer there.",
		func(ctx context.Context, a bodyArgs) (approval.Draft, error) {
			if strings.TrimSpace(a.Body) == "" {
				return approval.Draft{}, errors.New("body is empty")
			}
			it, err := tb.Store.Item(ctx, itemID)
			if err != nil {
				return approval.Draft{}, err
			}
			repo, _ := it.Meta["repo"].(string)
			number, _ := it.Meta["number"].(float64)
			owner, name, ok := strings.Cut(repo, "/")
			if !ok || number <= 0 {
				return approval.Draft{}, fmt.Errorf("item %d is not a GitHub issue or pull request", itemID)
			}
			return approval.Draft{
				Kind: approval.KindGitHubComment, Title: fmt.Sprintf("Comment on %s#%d: %s", repo, int(number), it.Title),
				Reason: "Proposed by the analysis of " + it.Title, Origin: "proactive",
				Payload: approval.GitHubCommentPayload{Owner: owner, Repo: name, Number: int(number), Body: strings.TrimSpace(a.Body)},
				ItemID:  itemID,
			}, nil
		})
}

type reasonArgs struct {
	Reason string `json:"reason" jsonschema:"one or two sentences for the owner: what the rule does and the evidence for it, citing items as [n]"`
}

func (tb Toolbox) proposeAutomation(subject string) (*agent.Tool, error) {
	kind, key, ok := strings.Cut(strings.TrimPrefix(subject, "pattern:"), ":")
	if !ok {
		return nil, fmt.Errorf("jobs: subject %q names no pattern", subject)
	}
	return agent.NewProposalTool("propose_automation", "Propose the standing rule this pattern suggests, for the owner's approval.",
		func(ctx context.Context, a reasonArgs) (approval.Draft, error) {
			d, ok, err := tb.Automation(ctx, kind, key)
			if err != nil {
				return approval.Draft{}, err
			}
			if !ok {
				return approval.Draft{}, fmt.Errorf("the pattern %s suggests no rule", kind)
			}
			if r := strings.TrimSpace(a.Reason); r != "" {
				d.Reason = r + " (" + d.Reason + ")"
			}
			return d, nil
		})
}
