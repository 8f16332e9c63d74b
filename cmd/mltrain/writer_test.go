package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/lock"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
)

// While another command holds the lab, a writer given --no-wait touches
// nothing and names the holder, and its own command without --no-wait.
func TestAWriterWithNoWaitLeavesTheHoldersLabAlone(t *testing.T) {
	ctx := context.Background()
	eng := fake.New()
	project := fmt.Sprintf("nowait%d", os.Getpid())
	mine := map[string]string{labels.Project: project}
	eng.Networks[project+"_default"] = mine
	eng.Volumes[project+"_minio-data"] = docker.Volume{Name: project + "_minio-data", Labels: mine}
	holder, err := lifecycle.LockLab(ctx, lifecycle.LockOptions{Engine: eng.Host(), Project: project, Command: "mltrain up"}, nil)
	require.NoError(t, err)
	defer holder.Release()
	for _, c := range []struct{ args, rerun []string }{
		{[]string{"down", "--no-wait"}, []string{"down"}},
		{[]string{"down", "--volumes", "--yes", "--no-wait"}, []string{"down", "--volumes", "--yes"}},
		{[]string{"worker", "stop", "1", "--no-wait"}, []string{"worker", "stop", "1"}},
	} {
		var out, errOut bytes.Buffer
		a := newApp(&out, &errOut)
		a.connect = func(context.Context) (docker.Engine, error) { return eng, nil }
		root := a.root()
		root.SetArgs(append(c.args, "--project", project))
		err := root.ExecuteContext(ctx)
		var held *lock.HeldError
		require.ErrorAs(t, err, &held, "%v", c.args)
		assert.Equal(t, fmt.Sprintf("another `mltrain up` (pid %d) holds lab %s", os.Getpid(), project), err.Error())
		assert.Equal(t, "wait for it to finish, then run '"+nextstep.Commands{Lab: state.Lab{Project: project}}.Line(c.rerun...)+"' (without --no-wait it waits by itself)", clierr.Hint(err))
		assert.Equal(t, clierr.ExitFailure, clierr.Code(err))
	}
	assert.Contains(t, eng.Networks, project+"_default", "the lab's network is kept")
	assert.Contains(t, eng.Volumes, project+"_minio-data", "the lab's volume is kept")
}
