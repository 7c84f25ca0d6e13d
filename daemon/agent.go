package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/jobs"
	"github.com/omnibrain/omnibrain/memory"
	"github.com/omnibrain/omnibrain/proactive"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

// agentHealth is the component the agent reports as.
const agentHealth = "agent"

// agentParts are the agent and the chat built on it.
type agentParts struct {
	agent *agent.Agent
	chat  *agent.Chat
	// profile is what the agent knows about the owner.
	profile *agent.ProfileBuilder
	// runs are the agent's checkpoints.
	runs *agent.Runs
	// jobs does the proactive engine's model work as background runs;
	// nil without a model (the templates do it).
	jobs *jobs.Runner
}

// openAgent builds the agent's tools (the standard ones and the plugins'),
// the agent over the router and the approval gate, and chat; it serves
// POST /api/v1/chat and resumes runs a restart interrupted.
func (a *App) openAgent(ctx context.Context, b *api.Backends) error {
	loc := a.cfg.Location
	// The hybrid searcher the API serves (keywords and meaning), so the
	// agent finds what `omnibrain search` finds; keywords alone without it.
	var searcher agent.Searcher = search.New(a.store, nil, a.log)
	if b.Search != nil {
		searcher = b.Search
	}
	tools, err := agent.StandardTools(agent.ToolDeps{
		Search: searcher, Items: a.store, Context: a.store, Location: loc, Now: a.store.Now, OwnerEmails: a.cfg.Owner.Emails,
	})
	if err != nil {
		return fmt.Errorf("daemon: agent tools: %w", err)
	}
	pluginMgr, err := a.openPlugins(ctx, b)
	if err != nil {
		return err
	}
	if err := a.memoryTools(tools); err != nil {
		return err
	}

	profile := a.profileBuilder()
	runs := agent.NewRuns(a.store)
	iterations := map[router.Task]int{}
	for task, route := range a.cfg.LLM.Routes {
		if route.MaxIterations > 0 {
			iterations[router.Task(task)] = route.MaxIterations
		}
	}
	chains := graph.NewChains(a.store)
	toolbox := jobs.Toolbox{Store: a.store, Chains: chains, Automation: a.automationFor}
	ag, err := agent.New(agent.Options{
		Model: a.llm, Tools: tools, MoreTools: pluginMgr.Tools, Proposer: a.approval.gate, Checkpoints: runs,
		Profile: profile, Memory: a.memory, Log: a.log.With("component", "agent"), Now: a.store.Now, Location: loc,
		TaskIterations: iterations, JobTools: toolbox.For,
		// A run long enough to outgrow the context keeps what its dropped
		// turns found, at the cost of one short reflection call.
		Summarize: true,
	})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	// A planning route in the configuration is the owner asking for plans
	// written by that model; without one, the templates are used as they are.
	refine := len(a.cfg.LLM.Routes[string(router.TaskPlanning)].Providers) > 0
	chat, err := agent.NewChat(agent.ChatOptions{
		Agent: ag, Search: searcher, Sessions: a.store, Log: a.log.With("component", "chat"), Now: a.store.Now, Location: loc,
		RefinePlans: refine,
	})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	a.agent = agentParts{agent: ag, chat: chat, profile: profile, runs: runs}
	if a.llm.Available() {
		a.agent.jobs, err = jobs.New(jobs.Options{
			Agent: ag, Runs: runs, Chains: chains, Store: a.store, Model: a.llm, OwnerName: a.cfg.Owner.Name, Location: loc,
			Log: a.log.With("component", "jobs"), Health: a.health, HealthName: agentHealth,
		})
		if err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	// "remember …" and "forget …" are answered by memory, with or without a model.
	b.Chat = memory.NewChat(chat, a.memory, a.store)

	if a.llm.Available() {
		a.health.Set(agentHealth, health.OK, fmt.Sprintf("%d tools", len(tools.Names())))
	} else {
		// Running without a model is a supported setup, not a fault: the
		// llm component says how to add one.
		a.health.Set(agentHealth, health.OK, "no model: chat answers with search results only (see llm)")
	}
	a.components = append(a.components, supervise.Component{Name: agentHealth, Run: a.resumeRuns})
	return nil
}

// resumeRuns continues background runs a restart interrupted (the jobs'
// runs a few at a time, through the job runner); chat runs are abandoned
// (nobody waits for their answer any more). Then it waits for shutdown,
// so resumed runs stop with the daemon and stay resumable.
func (a *App) resumeRuns(ctx context.Context) error {
	runs, err := a.agent.runs.Unfinished(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if a.agent.jobs != nil {
		wg.Go(func() {
			if err := a.agent.jobs.ResumeInterrupted(ctx); err != nil {
				a.log.Error("resuming background runs failed", "err", err)
			}
		})
	}
	for _, r := range runs {
		if r.Kind != "" {
			continue // the job runner's
		}
		if r.Interactive {
			if err := a.agent.runs.SetStatus(ctx, r.ID, agent.RunAbandoned); err != nil {
				return err
			}
			continue
		}
		ans, err := a.agent.agent.Resume(ctx, r.ID, nil)
		if err != nil {
			a.log.Error("resuming an agent run failed", "run", r.ID, "err", err)
			if serr := a.agent.runs.SetStatus(ctx, r.ID, agent.RunAbandoned); serr != nil {
				return errors.Join(err, serr)
			}
			continue
		}
		a.log.Info("resumed agent run finished", "run", r.ID, "stop", ans.Stop)
	}
	<-ctx.Done()
	return ctx.Err()
}

// profileBuilder gathers the agent's view of the owner from the store and
// the gate: pending proposals, today's calendar, top contacts, and the
// proactive engine's observations and learned preferences.
func (a *App) profileBuilder() *agent.ProfileBuilder {
	return &agent.ProfileBuilder{
		Owner: a.cfg.Owner.Name, Emails: a.cfg.Owner.Emails, Location: a.cfg.Location, Now: a.store.Now,
		Pending: func(ctx context.Context) ([]agent.ProfileProposal, error) {
			ps, err := a.approval.gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StatePending}, Limit: 10})
			if err != nil {
				return nil, err
			}
			out := make([]agent.ProfileProposal, len(ps))
			for i, p := range ps {
				out[i] = agent.ProfileProposal{ID: p.ID, Kind: string(p.Kind), Title: p.Title}
			}
			return out, nil
		},
		Today: func(ctx context.Context, from, to time.Time) ([]agent.ProfileEvent, error) {
			items, err := a.store.ItemsBetween(ctx, []string{"event"}, from, to, 30)
			if err != nil {
				return nil, err
			}
			out := make([]agent.ProfileEvent, 0, len(items))
			for _, it := range items {
				out = append(out, profileEvent(it))
			}
			return out, nil
		},
		TopContacts: func(ctx context.Context, n int) ([]agent.ProfileContact, error) {
			cs, err := a.store.TopContacts(ctx, n)
			if err != nil {
				return nil, err
			}
			out := make([]agent.ProfileContact, len(cs))
			for i, c := range cs {
				out[i] = agent.ProfileContact{Name: c.Name, Address: c.Address, Messages: c.Inbound + c.Outbound}
			}
			return out, nil
		},
		Observations: func(ctx context.Context, n int) ([]string, error) {
			obs, err := a.store.Observations(ctx, time.Time{}, n)
			if err != nil {
				return nil, err
			}
			out := make([]string, len(obs))
			for i, o := range obs {
				out[i] = o.Summary
				if o.Suggestion != "" {
					out[i] += " (so " + o.Suggestion + ")"
				}
			}
			return out, nil
		},
		Preferences: func(ctx context.Context) ([]string, error) {
			prefs, err := a.store.Preferences(ctx)
			if err != nil {
				return nil, err
			}
			return profilePreferences(prefs, 8), nil
		},
	}
}

// profilePreferences says what triage's strongest preferences mean, e.g.
// "mail from sender:bob@example.org ranks higher (you answer them within 2h)".
func profilePreferences(prefs []store.Preference, n int) []string {
	var out []string
	for _, p := range prefs {
		if len(out) == n {
			break
		}
		if p.Weight == 0 {
			continue
		}
		dir := "higher"
		if p.Weight < 0 {
			dir = "lower"
		}
		l := fmt.Sprintf("mail from %s ranks %s", p.Key, dir)
		switch {
		case p.Source == store.PreferenceOwner:
			l += " (set by the owner)"
		case p.Detail != "":
			l += " (" + p.Detail + ")"
		}
		out = append(out, l)
	}
	return out
}

// profileEvent reads a calendar item's meta (start, end, all_day, location).
func profileEvent(it *store.Item) agent.ProfileEvent {
	ev := agent.ProfileEvent{Start: it.Time, Title: it.Title}
	if s, ok := it.Meta["end"].(string); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			ev.End = t
		}
	}
	ev.AllDay, _ = it.Meta["all_day"].(bool)
	ev.Location, _ = it.Meta["location"].(string)
	return ev
}

// automationFor is the standing rule a stored pattern suggests (the
// automation job's proposal tool).
func (a *App) automationFor(ctx context.Context, kind, key string) (approval.Draft, bool, error) {
	obs, err := a.store.Observations(ctx, time.Time{}, 10000)
	if err != nil {
		return approval.Draft{}, false, err
	}
	for _, ob := range obs {
		if ob.Kind == kind && ob.Key == key {
			d, ok := proactive.AutomationFor(ob)
			return d, ok, nil
		}
	}
	return approval.Draft{}, false, nil
}

// Agent is the agent, for the proactive engine's background runs
// (Task.Interactive false: paused by the budget, resumed after restarts).
func (a *App) Agent() *agent.Agent { return a.agent.agent }

// Chat is the chat the Telegram bot and the API answer with.
func (a *App) Chat() *agent.Chat { return a.agent.chat }
