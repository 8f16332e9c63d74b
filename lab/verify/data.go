package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
)

func dataSpecs() []spec {
	return []spec{{id: "data.food11", group: GroupData, title: "the Food-11 volume holds the whole published dataset", run: checkData, slow: true}}
}

func (e *env) dataVolume() string {
	if v := e.plan.DataVolume; v != "" {
		return v
	}
	return food11.DefaultVolume
}

func splitCounts(c food11.Counts) string {
	parts := make([]string, 0, len(food11.Splits))
	for _, s := range food11.Splits {
		parts = append(parts, fmt.Sprintf("%s %d", s, c.Split(s)))
	}
	return strings.Join(parts, ", ")
}

func checkData(ctx context.Context, e *env) outcome {
	vol := e.dataVolume()
	load := e.cmd("data", "food11", "--volume", vol)
	if e.o.DataFull {
		if e.d.DataVerify == nil {
			return fail("report this as an mltrain bug", "no dataset verification configured")
		}
		rep, err := e.d.DataVerify(ctx, vol)
		if err != nil {
			return failErr(err, load+" --force")
		}
		if len(rep.Warnings) > 0 {
			return fail(load+" --force (with the course's Food-11 zip)", "%d images match the manifest, but differ from the published Food-11: %s",
				rep.Files, strings.Join(rep.Warnings, "; "))
		}
		return pass("counted %d images (%s) in volume %s: they match its manifest and the published Food-11", rep.Files, splitCounts(rep.Found), vol)
	}
	if e.d.Manifest == nil {
		return fail("report this as an mltrain bug", "no dataset manifest reader configured")
	}
	m, err := e.d.Manifest(ctx, vol)
	switch {
	case err != nil && docker.IsNotFound(err):
		return fail(load, "dataset volume %s does not exist", vol)
	case err != nil:
		return failErr(err, load)
	case m == nil:
		return fail(load, "volume %s has no manifest: the dataset was never loaded, or its load did not complete", vol)
	}
	if m.Files != m.Counts.Total() {
		return fail(load+" --force", "volume %s's manifest is inconsistent: %d files, but its counts add up to %d", vol, m.Files, m.Counts.Total())
	}
	if w := food11.CheckCanonical(m.Counts); len(w) > 0 {
		if len(w) > 4 {
			w = append(w[:4], fmt.Sprintf("and %d more", len(w)-4))
		}
		return fail(load+" --force (with the course's Food-11 zip)", "volume %s's manifest (%d images) differs from the published Food-11: %s",
			vol, m.Files, strings.Join(w, "; "))
	}
	src := m.Source.File
	if src == "" {
		src = m.Source.URL
	}
	sha := m.Source.SHA256
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return pass("volume %s manifest: %d images (%s), %d classes in every split; loaded %s from %s (sha256 %s…); '%s' counts the files",
		vol, m.Files, splitCounts(m.Counts), food11.NumClasses, m.LoadedAt.Format("2006-01-02"), src, sha, e.cmd("verify", "--data-full"))
}
