package workspace_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
)

// killLine is the by-hand kill of the infeasible job as a doc prints it.
func killLine(t *testing.T, doc string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "python -c 'import json,os,sys,urllib.request") {
			return l
		}
	}
	t.Fatalf("%s has no by-hand kill of the infeasible job", doc)
	return ""
}

// The by-hand end of the infeasible job, exactly as workspace/README.md and
// docs/LAB.md print it, run with python3 as a student runs it in Jupyter
// (RAY_ADDRESS=http://...:8265, the token in RAY_AUTH_TOKEN), ends the job
// on the modelled Ray: its supervisor is killed and the job turns FAILED.
func TestTheByHandKillOfTheInfeasibleJobEndsIt(t *testing.T) {
	py, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the docs' by-hand commands (.ci/run installs it)")
	for _, doc := range []string{"README.md", filepath.Join("..", "docs", "LAB.md")} {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			m := raytest.NewModel(t, raymodel.Config{}, "tok", raytest.LabNodes()...)
			id := "raysubmit_byhand"
			_, err := m.Submit(id, ray.SubmitRequest{Entrypoint: "python train.py --mode plain", EntrypointNumGPUs: 2, EntrypointNumCPUs: 8})
			require.NoError(t, err)
			j, _ := m.Job(id)
			require.Equal(t, ray.Pending, j.Status, "no node has 2 GPUs")

			line := strings.Replace(killLine(t, doc), "<submission id>", id, 1)
			cmd := exec.Command("sh", "-c", strings.Replace(line, "python -c", py+" -c", 1))
			cmd.Env = append(os.Environ(), "RAY_ADDRESS="+m.URL+"/", "RAY_AUTH_TOKEN=tok")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)

			rc, err := ray.New(ray.Options{Address: m.URL, Token: "tok"})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			last, err := rc.Wait(ctx, id, ray.WaitOptions{Poll: 10 * time.Millisecond})
			require.NoError(t, err)
			assert.Equal(t, ray.Failed, last.Status, "the killed supervisor fails the job")
		})
	}
}
