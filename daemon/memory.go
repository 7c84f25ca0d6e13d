package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/memory"
)

// openMemory opens what omnibrain remembers about the owner (MEMORY.md,
// SOUL.md, facts): the API serves it, and the daemon watches the files
// and runs extraction passes in the background. Call it before the agent,
// which puts memory into every prompt.
func (a *App) openMemory(ctx context.Context, b *api.Backends) error {
	opts := memory.Options{
		DB: a.store.DB(), Home: a.cfg.Home, Notifier: a.approval.queue, Health: a.health,
		Log: a.log.With("component", "memory"), Now: a.store.Now,
		RecentContextTTL: time.Duration(a.cfg.Memory.RecentContextDays) * 24 * time.Hour,
	}
	if a.llm != nil && a.llm.Available() {
		opts.Model = a.llm
	}
	m, err := memory.Open(ctx, opts)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	a.memory = m
	b.Memory = m
	a.components = append(a.components, supervise.Component{Name: memory.HealthName, Run: m.Run})
	return nil
}

// memoryTools adds memory's tools to the agent's registry.
func (a *App) memoryTools(tools *agent.Registry) error {
	ts, err := a.memory.Tools(a.store, a.cfg.Location)
	if err != nil {
		return fmt.Errorf("daemon: memory tools: %w", err)
	}
	for _, t := range ts {
		if err := tools.Add(t); err != nil {
			return fmt.Errorf("daemon: memory tools: %w", err)
		}
	}
	return nil
}
