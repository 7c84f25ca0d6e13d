package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/plugins"
	"github.com/omnibrain/omnibrain/store"
)

// openPlugins loads the plugins the owner added under HOME/plugins:
// their tools join every agent run (read tools run, the others propose),
// the plugin_action executor carries out approved calls, knowledge files
// are indexed, and the API serves reloads and plugins' own messages. The
// daemon asks chat-tools servers now and then whether their manifest
// changed; a changed one is not used until the owner confirms it.
func (a *App) openPlugins(ctx context.Context, b *api.Backends) (*plugins.Manager, error) {
	root := a.pluginsRoot()
	mgr, errs := plugins.Load(root, plugins.Options{
		Log: a.log.With("component", "plugins"), Report: a.health,
		CallTimeout: a.cfg.Plugins.CallTimeout, Now: a.store.Now,
	})
	if err := a.registerExecutor(mgr.Executor()); err != nil {
		return nil, err
	}
	pb := &pluginsBackend{a: a, mgr: mgr, msgs: plugins.NewMessages(mgr, a.approval.queue, a.cfg.Plugins.MessagesPerHour, a.store.Now)}
	pb.settle(ctx, errs)
	b.Plugins = pb
	a.components = append(a.components, supervise.Component{Name: plugins.HealthName, Run: pb.verifyLoop})
	return mgr, nil
}

func (a *App) pluginsRoot() string {
	if a.cfg.Plugins.Dir != "" {
		return a.cfg.Plugins.Dir
	}
	return a.cfg.Path("plugins")
}

type pluginsBackend struct {
	a    *App
	mgr  *plugins.Manager
	msgs *plugins.Messages
}

// settle indexes the knowledge files and reports the plugins' health
// after a (re)load.
func (p *pluginsBackend) settle(ctx context.Context, errs []error) {
	a, mgr := p.a, p.mgr
	items, kerrs := mgr.Knowledge()
	errs = append(errs, kerrs...)
	if len(items) > 0 {
		if _, err := a.store.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("plugins: knowledge: %w", err))
		}
	}
	switch {
	case len(errs) > 0:
		a.health.Degrade(plugins.HealthName, errors.Join(errs...))
	case len(mgr.Names()) == 0:
		a.health.Set(plugins.HealthName, health.Disabled, "no plugins added (omnibrain plugin add URL|DIR)")
	default:
		a.health.Set(plugins.HealthName, health.OK, fmt.Sprintf("%d plugins, %d tools, %d knowledge files", len(mgr.Names()), mgr.ToolCount(), len(items)))
	}
}

// Reload reads the added plugins again (the CLI changed them).
func (p *pluginsBackend) Reload(ctx context.Context) (*api.PluginsReloaded, error) {
	errs := p.mgr.Reload()
	p.settle(ctx, errs)
	res := &api.PluginsReloaded{Plugins: p.mgr.Names(), Tools: p.mgr.ToolCount(), Errors: []string{}}
	for _, err := range errs {
		res.Errors = append(res.Errors, err.Error())
	}
	return res, nil
}

// Message delivers a plugin's own message to the owner.
func (p *pluginsBackend) Message(ctx context.Context, name, key, text string) error {
	err := p.msgs.Deliver(ctx, name, key, text)
	var rl *plugins.RateLimitedError
	switch {
	case errors.Is(err, plugins.ErrMessageKey):
		return api.ErrUnauthorized
	case errors.Is(err, plugins.ErrMessageHeld):
		return fmt.Errorf("%w: %v", api.ErrForbidden, err)
	case errors.Is(err, plugins.ErrMessageText):
		return api.BadRequest("%v", err)
	case errors.As(err, &rl):
		return &api.RateLimitedError{RetryAfter: rl.RetryAfter}
	}
	return err
}

// verifyLoop asks the chat-tools servers for their manifests at start
// and then every plugins.verify_interval; a changed manifest holds the
// plugin and the owner is told once per change.
func (p *pluginsBackend) verifyLoop(ctx context.Context) error {
	t := time.NewTicker(p.a.cfg.Plugins.VerifyInterval)
	defer t.Stop()
	for {
		p.verify(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (p *pluginsBackend) verify(ctx context.Context) {
	var problems []string
	for _, v := range p.mgr.VerifyAll(ctx) {
		if ctx.Err() != nil {
			return
		}
		switch v.State {
		case plugins.StateOK:
			continue
		case plugins.StateChanged:
			msg := notify.Message{Level: notify.Important, Key: "plugin-changed:" + v.Name + ":" + v.SHA256,
				Text: fmt.Sprintf("Plugin %s: %s.", v.Name, v.Detail)}
			if err := p.a.approval.queue.Notify(ctx, msg); err != nil {
				p.a.log.Error("could not tell the owner about a changed plugin", "plugin", v.Name, "err", err)
			}
		}
		p.a.log.Warn("plugin check", "plugin", v.Name, "state", v.State, "detail", v.Detail)
		problems = append(problems, v.Name+": "+v.State+" ("+v.Detail+")")
	}
	if len(problems) > 0 {
		p.a.health.Degrade(plugins.HealthName, errors.New(strings.Join(problems, "; ")))
	}
}
