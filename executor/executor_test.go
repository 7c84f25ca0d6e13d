package executor_test

import (
	"context"
	"testing"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/executor"
)

type nop struct {
	name  string
	kinds []approval.Kind
}

func (nop) Execute(context.Context, *approval.Proposal, string) (string, error) { return "", nil }
func (nop) Find(context.Context, *approval.Proposal, string) (string, bool, error) {
	return "", false, nil
}
func (n nop) Kinds() []approval.Kind { return n.kinds }

func TestRegistry(t *testing.T) {
	r := executor.NewRegistry()
	gmail := nop{"gmail", []approval.Kind{approval.KindReply, approval.KindEmail, approval.KindForward}}
	cal := nop{"calendar", []approval.Kind{approval.KindCalendarCreate}}
	if err := r.Register(gmail); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(cal); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(nop{"other", []approval.Kind{approval.KindGitHubComment, approval.KindEmail}}); err == nil {
		t.Error("a second executor for email was accepted")
	}
	if _, ok := r.Executor(approval.KindGitHubComment); ok {
		t.Error("a refused registration left github_comment registered")
	}
	if err := r.Register(nil); err == nil {
		t.Error("nil executor accepted")
	}
	if err := r.Register(nop{"none", nil}); err == nil {
		t.Error("an executor of no kind accepted")
	}
	if ex, ok := r.Executor(approval.KindEmail); !ok || ex.(nop).name != "gmail" {
		t.Errorf("email → %v %v", ex, ok)
	}
	if got := r.Kinds(); len(got) != 4 || got[0] != approval.KindCalendarCreate {
		t.Errorf("kinds %v", got)
	}
}

// TestExecutorsNameTheirKinds: every executor here carries out exactly the
// kinds the approval package gives it, and no two share one.
func TestExecutorsNameTheirKinds(t *testing.T) {
	r := executor.NewRegistry()
	for _, ex := range []executor.Executor{&executor.Gmail{}, &executor.Calendar{}, &executor.GitHubComment{}, executor.Automation{}} {
		if err := r.Register(ex); err != nil {
			t.Fatal(err)
		}
	}
	want := []approval.Kind{approval.KindAutomation, approval.KindCalendarCreate, approval.KindCalendarDelete, approval.KindCalendarRespond,
		approval.KindCalendarUpdate, approval.KindEmail, approval.KindForward, approval.KindGitHubComment, approval.KindReply}
	got := r.Kinds()
	if len(got) != len(want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kinds %v, want %v", got, want)
		}
	}
}
