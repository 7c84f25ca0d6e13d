package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/collectors/importer"
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
		im:     importer.New(importer.Options{Store: a.store, Log: a.log.With("component", importerHealth)}),
		health: a.health,
	}
	return nil
}

// apiImporter adapts the importer to the API's Importer interface.
type apiImporter struct {
	im     *importer.Importer
	health *health.Registry
}

func (ai *apiImporter) Import(ctx context.Context, req api.ImportRequest, progress func(api.ImportProgress)) (*api.ImportSummary, error) {
	if !filepath.IsAbs(req.Path) {
		// The daemon's working directory is not the caller's.
		return nil, api.BadRequest("import: path %q must be absolute", req.Path)
	}
	sum, err := ai.im.Import(ctx, req.Format, req.Path, func(p importer.Progress) {
		progress(api.ImportProgress{Done: p.Done, Total: p.Total, Unit: p.Unit, Added: p.Added})
	})
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
	return out, nil
}
