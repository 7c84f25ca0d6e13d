package executor_test

import (
	"context"
	"testing"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/executor"
)

type nop struct{ name string }

func (nop) Execute(context.Context, *approval.Proposal, string) (string, error) { return "", nil }
func (nop) Find(context.Context, *approval.Proposal, string) (string, bool, error) {
	return "", false, nil
}

func TestRegistry(t *testing.T) {
	r := executor.NewRegistry()
	gmail, cal := nop{"gmail"}, nop{"calendar"}
	if err := r.Register(gmail, approval.KindReply, approval.KindEmail, approval.KindForward); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(cal, approval.KindCalendarCreate); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(cal, approval.KindEmail); err == nil {
		t.Error("a second executor for email was accepted")
	}
	if err := r.Register(nil, approval.KindGitHubComment); err == nil {
		t.Error("nil executor accepted")
	}
	if ex, ok := r.Executor(approval.KindEmail); !ok || ex.(nop).name != "gmail" {
		t.Errorf("email → %v %v", ex, ok)
	}
	if _, ok := r.Executor(approval.KindGitHubComment); ok {
		t.Error("github_comment has no executor yet")
	}
	if got := r.Kinds(); len(got) != 4 || got[0] != approval.KindCalendarCreate {
		t.Errorf("kinds %v", got)
	}
}
