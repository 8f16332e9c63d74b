package nextstep

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

func TestCommandsLineCarriesTheLabsFlags(t *testing.T) {
	assert.Equal(t, "mltrain status", Commands{}.Line("status"))
	assert.Equal(t, "mltrain status", Commands{Lab: state.Lab{Project: service.DefaultProject}}.Line("status"), "the default lab needs no flag")
	assert.Equal(t, "mltrain status", Commands{Lab: state.Lab{Project: "Bad Name"}}.Line("status"), "an invalid --project is not carried")
	assert.Equal(t, `mltrain --project lab2 --state-dir "/srv/my labs/2" logs minio`,
		Commands{Lab: state.Lab{Project: "lab2", StateDir: "/srv/my labs/2"}}.Line("logs", "minio"), "a path with a space is quoted")
	assert.Equal(t, "mltrain up", Commands{}.Again(), "no command read: up")
	assert.Equal(t, "mltrain join BUNDLE --timeout 20m --workers 2",
		Commands{Ran: []string{"join", "BUNDLE", "--timeout", "5m", "--workers", "2"}}.AgainWith("--timeout", "20m"), "the flag's value is replaced")
	assert.Equal(t, "mltrain up --timeout 20m", Commands{}.AgainWith("--timeout", "20m"))
	assert.Equal(t, "mltrain --project lab2 join BUNDLE --workers 2",
		Commands{Lab: state.Lab{Project: "lab2"}, Ran: []string{"join", "BUNDLE", "--workers", "2"}}.Again())
}

func TestCommandsForNameTheStateDirOnlyWhereItIsNotTheDefault(t *testing.T) {
	assert.Equal(t, "mltrain --project lab2 status", CommandsFor("lab2", state.DefaultDir("lab2")).Line("status"))
	assert.Equal(t, "mltrain status", CommandsFor(service.DefaultProject, "").Line("status"))
	assert.Equal(t, `mltrain --project lab2 --state-dir "/srv/my labs/2" status`, CommandsFor("lab2", "/srv/my labs/2").Line("status"))
}

// A failure below lab/ names what went wrong; the next step names the
// command the user ran, on the user's lab.
func TestHintNamesTheCommandTheUserRan(t *testing.T) {
	join := Commands{Lab: state.Lab{Project: "lab2"}, Ran: []string{"join", "BUNDLE"}}
	up := Commands{Lab: state.Lab{Project: "lab2"}, Ran: []string{"up"}}
	cf := fmt.Errorf("wait: %w", &compose.ContainerFailure{Container: "lab2-ray-worker-1", Reason: "exited with code 1"})
	assert.Equal(t, "see 'docker logs lab2-ray-worker-1' and 'docker inspect lab2-ray-worker-1', fix the cause, "+
		"then run 'mltrain --project lab2 join BUNDLE' again (or 'mltrain --project lab2 status')", join.Hint(cf))
	assert.Contains(t, up.Hint(cf), "then run 'mltrain --project lab2 up' again")

	for _, err := range []error{
		&compose.NotHealthyError{Container: "lab2-ray-worker-1"},
		clierr.Mark(errors.New("image x is not on this host"), compose.ErrImageMissing),
		clierr.Mark(errors.New("port taken"), compose.ErrPortTaken),
		&images.BuildError{Ref: "w:1", LabImage: true, Err: errors.New("build w:1: boom")},
		clierr.Mark(errors.New("lab not ready after 10m"), ready.ErrNotReady),
	} {
		assert.Contains(t, join.Hint(err), "'mltrain --project lab2 join BUNDLE", err)
		assert.NotContains(t, join.Hint(err), " up'", err)
	}
}

func TestHintOfEveryKindBelowLab(t *testing.T) {
	c := Commands{Lab: state.Lab{Project: "lab2"}, Ran: []string{"up"}}
	for err, want := range map[error]string{
		clierr.Mark(errors.New("x"), compose.ErrNotRendered):             "run 'mltrain --project lab2 render' (or 'mltrain --project lab2 up') to write it",
		clierr.Mark(errors.New("x"), compose.ErrNoGPURuntime):            "run 'mltrain --project lab2 doctor' (NVIDIA:",
		&images.UnavailableError{Policy: images.PullNever}:               "run again with --pull missing, or preload the images: 'mltrain images load FILE'",
		&images.BuildError{Ref: "x:1", Err: errors.New("boom")}:          "fix the failing step, then run 'mltrain --project lab2 up' again",
		&images.CorruptArchiveError{File: "f", Err: errors.New("short")}: "and copy it completely",
		clierr.Mark(errors.New("x"), images.ErrBadArchive):               "make the archive again with 'mltrain images save FILE'",
		clierr.Mark(errors.New("x"), images.ErrNoArchive):                "give the path of a file made by 'mltrain images save FILE'",
		clierr.Mark(errors.New("x"), images.ErrNothingToSave):            "run 'mltrain build' (and 'mltrain --project lab2 up' for the external images)",
		store.ErrNoEndpoint: "pass --minio-endpoint host:9000 or run 'mltrain --project lab2 up'",
		clierr.Mark(errors.New("x"), store.ErrNoCredentials):      "('mltrain --project lab2 up' printed them)",
		clierr.Mark(errors.New("x"), store.ErrUnreachable):        "run 'mltrain --project lab2 status' to see whether minio is up",
		clierr.Mark(errors.New("x"), store.ErrCredentialsRefused): "printed by 'mltrain --project lab2 up'",
		clierr.Mark(errors.New("x"), store.ErrRootRefused):        "remove MINIO_ROOT_USER/MINIO_ROOT_PASSWORD from compose.override.yaml, then 'mltrain --project lab2 up'",
		store.ErrNoAdmin: "run 'mltrain --project lab2 up'",
		ray.ErrNoAddress: "or run 'mltrain --project lab2 up' first",
		fmt.Errorf("%w at http://h:8265: refused", ray.ErrUnreachable):           "run 'mltrain --project lab2 status' to see whether the Ray head is up",
		fmt.Errorf("401 (%w)", ray.ErrAuthMissing):                               "export RAY_AUTH_TOKEN=<the Ray token 'mltrain --project lab2 up' printed>",
		fmt.Errorf("403 (%w)", ray.ErrAuthInvalid):                               "'mltrain --project lab2 status' shows where it is kept",
		clierr.WithHint(clierr.Mark(errors.New("x"), ray.ErrAuthInvalid), "own"): "own",
	} {
		assert.Contains(t, c.Hint(err), want, err)
	}
	assert.Empty(t, c.Hint(errors.New("something else")))
	assert.Empty(t, c.Hint(nil))
}
