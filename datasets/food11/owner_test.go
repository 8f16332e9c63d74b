package food11

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
)

// `up` reading the manifest while `data food11` loads the same volume: the
// load's helpers belong to a live process and are not removed as stale;
// those of a process gone, of this one, of another host or without the
// label are.
func TestRemoveStaleSparesTheHelpersOfALiveProcess(t *testing.T) {
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	host, _ := os.Hostname()
	f := fake.New()
	owners := map[string]string{
		"live":       fmt.Sprintf("%s/%d", host, os.Getppid()),
		"gone":       fmt.Sprintf("%s/%d", host, gone.Process.Pid),
		"self":       selfOwner(),
		"other-host": "not-" + host + "/1",
		"unlabelled": "",
	}
	for name, owner := range owners {
		l := map[string]string{LabelRole: roleHelper, LabelHelperVolume: "v"}
		if owner != "" {
			l[LabelHelperOwner] = owner
		}
		f.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: name, Labels: l}})
	}
	h := &helper{eng: f, volume: "v"}
	require.NoError(t, h.removeStale(context.Background()))
	left, err := f.ContainerList(context.Background(), map[string]string{LabelHelperVolume: "v"})
	require.NoError(t, err)
	var names []string
	for _, c := range left {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"live"}, names)
	assert.Equal(t, selfOwner(), h.labels()[LabelHelperOwner], "a helper names its owner")
}
