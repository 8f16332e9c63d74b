package food11

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
)

// extractorClearEnv set: the extractor empties the volume instead.
const extractorClearEnv = "MLTRAIN_FOOD11_CLEAR"

// runClear removes everything in dst (the volume) and reports on out.
func runClear(out io.Writer, dst string) int {
	enc := json.NewEncoder(out)
	ents, err := os.ReadDir(dst)
	for _, e := range ents {
		if err != nil {
			break
		}
		err = os.RemoveAll(filepath.Join(dst, e.Name()))
	}
	if err != nil {
		_ = enc.Encode(extractorMsg{Error: err.Error()})
		return 1
	}
	_ = enc.Encode(extractorMsg{Done: true})
	return 0
}

// empty makes the volume hold nothing. A plain local volume is recreated
// (the clean slate, with mltrain's labels); a volume with a driver or
// options of its own (a dataset on its own disk) keeps them: the extractor
// empties it in place, and where it cannot run (an engine that cannot mount
// this host's files) the volume is refused, never silently recreated on
// Docker's root disk.
func (h *helper) empty(ctx context.Context) error {
	if (h.vol.Driver == "" || h.vol.Driver == "local") && len(h.vol.Options) == 0 {
		return h.recreate(ctx)
	}
	err := h.clear(ctx)
	if err == nil || !errors.Is(err, errNoExtractor) {
		return err
	}
	return &RerunError{Err: fmt.Errorf("dataset volume %s (%s) must be emptied for the new load, and mltrain can keep its driver options only by emptying it through its extractor: %w",
		h.volume, (&NoSpaceError{Driver: h.vol.Driver, Options: h.vol.Options}).Filesystem(), err),
		Do: fmt.Sprintf("empty it yourself (docker volume rm %s, then docker volume create with the same --driver and --opt)", h.volume)}
}

// clear runs the extractor in its emptying mode and waits for it.
func (h *helper) clear(ctx context.Context) error {
	if !selfExtractor.Load() {
		return fmt.Errorf("%w: this binary's main does not call food11.ExtractorMain", errNoExtractor)
	}
	s, err := findSelf()
	if err != nil {
		return err
	}
	id, err := h.eng.ContainerCreate(ctx, s.spec(h, "", ""))
	if err != nil {
		return fmt.Errorf("%w: the engine cannot mount this host's files: %v", errNoExtractor, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.eng.ContainerRemove(rctx, id, true)
	}()
	if err := h.eng.ContainerStart(ctx, id); err != nil {
		return fmt.Errorf("%w: start: %v", errNoExtractor, err)
	}
	var out, errOut bytes.Buffer
	lerr := h.eng.ContainerLogs(ctx, id, docker.LogsOptions{Follow: true}, &out, &errOut)
	if ctx.Err() != nil {
		return fmt.Errorf("empty volume %s interrupted: %w", h.volume, ctx.Err())
	}
	d, ierr := h.eng.ContainerInspect(ctx, id)
	if lerr != nil || ierr != nil {
		return fmt.Errorf("empty volume %s: %w", h.volume, errors.Join(lerr, ierr))
	}
	var last extractorMsg
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		_ = json.Unmarshal(l, &last)
	}
	switch {
	case last.Done && d.ExitCode == 0:
		return nil
	case last.Error != "":
		return fmt.Errorf("empty volume %s: %s", h.volume, last.Error)
	}
	return fmt.Errorf("%w: it exited with code %d: %s", errNoExtractor, d.ExitCode, strings.TrimSpace(out.String()+errOut.String()))
}
