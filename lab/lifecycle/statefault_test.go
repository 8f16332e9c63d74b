package lifecycle_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
)

// A state.json cut short is not "no state": up refuses to write over it and
// says how to go on; the lab's containers are untouched.
func TestUpRefusesAnUnreadableStateFile(t *testing.T) {
	f := newFakeLab(t)
	_, err := f.up()
	require.NoError(t, err)
	path := f.state.File(state.StateFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	cut := b[:len(b)/2]
	require.NoError(t, os.WriteFile(path, cut, 0o600))
	before := f.containers()

	_, err = f.up()
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+" is not valid JSON")
	assert.Contains(t, nextstep.Commands{}.Hint(err), "mv "+path+" "+path+".broken")
	assert.Contains(t, nextstep.Commands{}.Hint(err), "'mltrain up'")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, cut, after, "the broken file is left for a look")
	assert.Equal(t, before, f.containers(), "no container was touched")

	_, err = f.state.State()
	require.Error(t, err, "readers say the same")
	assert.Contains(t, err.Error(), "cannot be used")
	assert.Contains(t, nextstep.Commands{}.Hint(err), ".broken")
}

// Secrets minted anew would not open the volumes made with the lost ones:
// up refuses, mints nothing, and names both ways on.
func TestUpRefusesNewCredentialsOverTheLabsVolumes(t *testing.T) {
	f := newFakeLab(t)
	_, err := f.up()
	require.NoError(t, err)
	creds := f.state.File(state.CredentialsFile)
	require.NoError(t, os.Remove(creds))

	_, err = f.up()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `lab "fakelab"'s volumes fakelab_grafana-data, fakelab_minio-data hold data made with credentials`)
	assert.Contains(t, nextstep.Commands{}.Hint(err), "restore "+creds)
	assert.Contains(t, nextstep.Commands{}.Hint(err), "'mltrain down --volumes'")
	_, err = os.Stat(creds)
	assert.True(t, os.IsNotExist(err), "no secret was minted")
}
