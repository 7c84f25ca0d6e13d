package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/collectors/importer"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
)

// importerHealth is the component imports report as.
const importerHealth = "importer"

// openImporter records the configured owner addresses and VIPs (contacts
// and threads need them for every mail, imported or collected) and serves
// POST /api/v1/import with the archive importer.
func (a *App) openImporter(ctx context.Context, b *api.Backends) error {
	if len(a.cfg.Owner.Emails) > 0 {
		if err := a.store.AddOwnerAddresses(ctx, "config", a.cfg.Owner.Emails...); err != nil {
			return fmt.Errorf("owner.emails: %w", err)
		}
	}
	if err := a.store.SetVIPRules(ctx, a.cfg.Owner.VIPs); err != nil {
		return fmt.Errorf("owner.vips: %w", err)
	}
	b.Importer = &apiImporter{
		im:     importer.New(importer.Options{Store: a.store, Log: a.log.With("component", importerHealth), Now: a.store.Now}),
		health: a.health,
		app:    a,
	}
	return nil
}

// apiImporter adapts the importer to the API's Importer interface.
type apiImporter struct {
	im     *importer.Importer
	health *health.Registry
	app    *App // its triage (built after the importer) decides recent mail
}

func (ai *apiImporter) Import(ctx context.Context, req api.ImportRequest, progress func(api.ImportProgress)) (*api.ImportSummary, error) {
	if !filepath.IsAbs(req.Path) {
		// The daemon's working directory is not the caller's.
		return nil, api.BadRequest("import: path %q must be absolute", req.Path)
	}
	sum, err := ai.im.Import(ctx, req.Format, req.Path, func(p importer.Progress) {
		progress(api.ImportProgress{Done: p.Done, Total: p.Total, Unit: p.Unit, Added: p.Added})
	})
	ai.app.vectors.WritesDone() // what the import left queued gets every core
	switch {
	case errors.Is(err, importer.ErrUsage):
		return nil, api.BadRequest("%v", err)
	case err != nil && ctx.Err() == nil:
		ai.health.Failure(importerHealth, err)
		return nil, err
	case err != nil:
		return nil, err
	}
	ai.health.Success(importerHealth)
	ai.health.Add(importerHealth, "imported", int64(sum.Added))
	out := &api.ImportSummary{
		Format: sum.Format, Path: sum.Path, Seen: sum.Seen, Added: sum.Added, Updated: sum.Updated,
		Unchanged: sum.Unchanged, Failed: make([]api.ImportFailure, 0, len(sum.Failed)), Seconds: sum.Duration.Seconds(),
	}
	for _, f := range sum.Failed {
		out.Failed = append(out.Failed, api.ImportFailure{Where: f.Where, Reason: f.Reason})
	}
	for _, f := range sum.Undated {
		out.Undated = append(out.Undated, api.ImportFailure{Where: f.Where, Reason: f.Reason})
	}
	for _, f := range sum.Kept {
		out.Kept = append(out.Kept, api.ImportFailure{Where: f.Where, Reason: f.Reason})
	}
	if len(sum.Recent) > 0 {
		out.Triage = ai.triage(ctx, sum.Recent)
	}
	return out, nil
}

// triage has the import's recent mail decided now, quietly (with or
// without a daemon: a first import with no account must give a real
// briefing), and says what was decided and where it will show.
func (ai *apiImporter) triage(ctx context.Context, ids []int64) *api.ImportTriage {
	a := ai.app
	out := &api.ImportTriage{Days: int(importer.RecentWindow / (24 * time.Hour)), Mails: len(ids)}
	if t := a.proactive.triage; t != nil {
		if _, err := t.Pass(ctx); err != nil {
			a.log.Warn("triage of the imported mail failed; it is retried", "err", err)
		}
	}
	for _, id := range ids {
		tr, err := a.store.TriageOf(ctx, id)
		if err != nil {
			out.Undecided++
			continue
		}
		switch tr.Decision {
		case "respond":
			out.NeedAnswer++
		case "notify":
			out.WorthKnowing++
		default:
			out.Ignored++
		}
	}
	now := a.store.Now()
	out.NextBriefing = nextBriefing(a.cfg.Schedule, a.cfg.Location, now)
	// Today's morning briefing, once made, is kept: showing the import in
	// it means making it again.
	out.Show = "omnibrain briefing morning"
	if _, err := a.store.BriefingFor(ctx, "morning", now.In(a.cfg.Location).Format(time.DateOnly)); err == nil {
		out.Show += " --refresh"
	}
	return out
}

// nextBriefing names the next scheduled morning or evening briefing.
func nextBriefing(s config.Schedule, loc *time.Location, now time.Time) string {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	name, next := "", time.Time{}
	for _, b := range []struct{ name, spec string }{{"morning", s.MorningBriefing}, {"evening", s.EveningBriefing}} {
		sched, err := parser.Parse(b.spec)
		if err != nil {
			continue
		}
		if t := sched.Next(now.In(loc)); next.IsZero() || t.Before(next) {
			name, next = b.name, t
		}
	}
	if next.IsZero() {
		return ""
	}
	day := next.Format("Mon Jan 2")
	switch today := now.In(loc); {
	case next.YearDay() == today.YearDay() && next.Year() == today.Year():
		day = "today"
	case next.Add(-24*time.Hour).YearDay() == today.YearDay():
		day = "tomorrow"
	}
	return fmt.Sprintf("%s, %s %s", name, day, next.Format("15:04"))
}
