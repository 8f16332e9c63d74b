package lifecycle

import (
	"context"

	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/state"
)

// Render plans the lab for facts and writes it to dir without starting
// anything: the credentials (made once, kept in dir), the plan, then
// compose.yaml and the files beside it, written and loaded back as up does
// (the user's override merged, validated).
func Render(ctx context.Context, dir state.Dir, facts host.Facts, opts plan.Options) (render.Rendered, plan.Plan, error) {
	creds, _, err := dir.CreateCredentials()
	if err != nil {
		return render.Rendered{}, plan.Plan{}, err
	}
	p, err := plan.New(facts, opts, creds)
	if err != nil {
		return render.Rendered{}, plan.Plan{}, err
	}
	r, err := render.Render(ctx, dir, p)
	return r, p, err
}
